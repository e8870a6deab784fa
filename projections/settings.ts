/**
 * Synced client settings (Stoat's `user_settings`): the hash `settings:<userId>` of `[timestamp, value]` by
 * key, and the stream revision the next write expects (the per-user key limit holds by it). Each write
 * replaces its keys, whatever their old timestamps (Stoat's `$set`). Emits `UserSettingsUpdate {id, update}`
 * to every socket of the user (Stoat's private topic: the writer's own sockets too; clients skip their own
 * change by its timestamp).
 */
import { SETTINGS_STREAM } from '../src/domain/settings/events.ts';
import { rm } from '../src/readmodel/keys.ts';
import type { Projection } from './types.ts';

export const settingsProjection: Projection = {
  name: 'settings',
  handles: ['UserSettingsSet'],
  apply(e, tx) {
    if (e.type !== 'UserSettingsSet' || !e.stream.startsWith(SETTINGS_STREAM)) return;
    const userId = e.stream.slice(SETTINGS_STREAM.length);
    const { timestamp, settings } = e.data;
    for (const [key, value] of settings) tx.hsetJson(rm.userSettings(userId), key, [timestamp, value]);
    tx.setJson(rm.userSettingsRevision(userId), e.revision);
    tx.emit({ kind: 'user', userId }, { type: 'UserSettingsUpdate', id: userId, update: Object.fromEntries(settings.map(([k, v]) => [k, [timestamp, v]])) });
  },
};
