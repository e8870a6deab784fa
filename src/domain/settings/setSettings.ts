/**
 * Settings sync (Stoat's `sync/set_settings`): a write stores `[timestamp, value]` for each key it names.
 * Timestamps as in Stoat: the query's `timestamp` when it is not in the future, otherwise (and when absent)
 * the server's clock, in milliseconds; the write replaces the stored entries whatever their timestamps (the
 * last write wins, as Stoat's `$set`). Bounded here (Stoat has no bound): at most `keys` distinct keys per
 * user, keys of 1–`keyLength` code points, values of at most `valueBytes` UTF-8 bytes, at most
 * `writeMaxBytes` of keys and values in one write; and what one account adds to the log per day is bounded
 * by the route's byte budget (`settingsLogCost`).
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

/** Bytes the log is charged per settings event beyond its keys and values (envelope, metadata, timestamp). */
export const SETTINGS_EVENT_OVERHEAD = 256;

/** UTF-8 bytes of a write's keys and values. */
export function settingsWriteBytes(settings: ReadonlyArray<readonly [string, string]>): number {
  let n = 0;
  for (const [k, v] of settings) n += Buffer.byteLength(k, 'utf8') + Buffer.byteLength(v, 'utf8');
  return n;
}

/** Refuses a write of more than `writeMaxBytes` bytes of keys and values (400 FailedValidation). */
export function checkSettingsWriteSize(settings: ReadonlyArray<readonly [string, string]>, writeMaxBytes: number): void {
  const bytes = settingsWriteBytes(settings);
  if (bytes > writeMaxBytes) {
    throw new AppError({ type: 'FailedValidation', error: `body: one write stores at most ${writeMaxBytes} bytes of keys and values (this one has ${bytes})` });
  }
}

/** What a write costs the account's daily log budget: its bytes plus the event's overhead (0 for an empty write). */
export function settingsLogCost(settings: ReadonlyArray<readonly [string, string]>): number {
  return settings.length === 0 ? 0 : SETTINGS_EVENT_OVERHEAD + settingsWriteBytes(settings);
}

/** The stored timestamp of a write: the requested one unless it lies in the future (then now), or now. */
export function settingsTimestamp(requested: number | undefined, now: number): number {
  return requested === undefined || requested > now ? now : requested;
}

/** Input of SetSettings: the body's pairs (already checked for shape) and the query's timestamp. */
export interface SetSettings {
  settings: ReadonlyArray<readonly [string, string]>;
  timestamp?: number | undefined;
}

/** Checks the write's byte cap and the per-user key limit and returns the `UserSettingsSet` event (none for an empty write). */
export function decideSetSettings(cmd: SetSettings, stored: ReadonlySet<string>, ctx: { now: number; writeMaxBytes: number }): DomainEvent[] {
  if (cmd.settings.length === 0) return [];
  checkSettingsWriteSize(cmd.settings, ctx.writeMaxBytes);
  const keys = new Set(stored);
  for (const [k] of cmd.settings) keys.add(k);
  if (keys.size > SETTINGS_LIMITS.keys) {
    throw new AppError({ type: 'FailedValidation', error: `body: a user stores at most ${SETTINGS_LIMITS.keys} settings keys (this write would make ${keys.size})` });
  }
  return [{ type: 'UserSettingsSet', data: { timestamp: settingsTimestamp(cmd.timestamp, ctx.now), settings: cmd.settings.map(([k, v]) => [k, v] as [string, string]) } }];
}
