/**
 * Events of a user's synced client settings (stream `settings-<userId>`, scope = the user id; Stoat's
 * `user_settings` collection). Each write stores `[timestamp, value]` for its keys, replacing what was
 * there whatever its timestamp (Stoat's `$set`): the timestamp is for clients to avoid feedback loops.
 */
import { z } from 'zod';

export const settingsEvents = {
  /**
   * Settings were written: every `[key, value]` pair now holds `[timestamp, value]`. Pairs, not an object:
   * the keys are chosen by the client and never index a plain object.
   */
  UserSettingsSet: z.object({ timestamp: z.number().int(), settings: z.array(z.tuple([z.string(), z.string()])) }),
};

/** Stream of a user's settings. */
export const settingsStream = (userId: string) => `settings-${userId}`;
/** Prefix of the settings streams. */
export const SETTINGS_STREAM = 'settings-';
