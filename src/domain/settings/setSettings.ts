/**
 * Settings sync (Stoat's `sync/set_settings`): a write stores `[timestamp, value]` for each key it names.
 * Timestamps as in Stoat: the query's `timestamp` when it is not in the future, otherwise (and when absent)
 * the server's clock, in milliseconds; the write replaces the stored entries whatever their timestamps (the
 * last write wins, as Stoat's `$set`). Bounded here (Stoat has no bound): at most `keys` distinct keys per
 * user, keys of 1–`keyLength` code points, values of at most `valueBytes` UTF-8 bytes.
 */
import { AppError } from '../../errors.ts';
import type { DomainEvent } from '../events.ts';

/** The bounds of a user's settings. */
export const SETTINGS_LIMITS = {
  /** Distinct keys a user may store (and may name in one fetch or one write). */
  keys: 64,
  /** Code points of a key. */
  keyLength: 100,
  /** UTF-8 bytes of one value. */
  valueBytes: 100_000,
} as const;

/** The stored timestamp of a write: the requested one unless it lies in the future (then now), or now. */
export function settingsTimestamp(requested: number | undefined, now: number): number {
  return requested === undefined || requested > now ? now : requested;
}

/** Input of SetSettings: the body's pairs (already checked for shape) and the query's timestamp. */
export interface SetSettings {
  settings: ReadonlyArray<readonly [string, string]>;
  timestamp?: number | undefined;
}

/** Checks the per-user key limit and returns the `UserSettingsSet` event (none for an empty write). */
export function decideSetSettings(cmd: SetSettings, stored: ReadonlySet<string>, ctx: { now: number }): DomainEvent[] {
  if (cmd.settings.length === 0) return [];
  const keys = new Set(stored);
  for (const [k] of cmd.settings) keys.add(k);
  if (keys.size > SETTINGS_LIMITS.keys) {
    throw new AppError({ type: 'FailedValidation', error: `body: a user stores at most ${SETTINGS_LIMITS.keys} settings keys (this write would make ${keys.size})` });
  }
  return [{ type: 'UserSettingsSet', data: { timestamp: settingsTimestamp(cmd.timestamp, ctx.now), settings: cmd.settings.map(([k, v]) => [k, v] as [string, string]) } }];
}
