/**
 * Events of retention (issue 39 part 1): the policies (stream `retention`, scope `instance`), set by instance
 * admins or the operator, and the destruction of a channel's time-bucket key once every message of the bucket
 * expired (stream `contentkey-<channel>-<bucket start>`, one event, appended `no_stream` so two sweeps agree).
 * The erasure of one message is `MessageErased` on its own stream (src/domain/message/events.ts).
 */
import { z } from 'zod';

/** The stream of the retention policies. */
export const RETENTION_STREAM = 'retention';

/** The stream recording one bucket key's destruction. */
export const contentKeyStream = (channel: string, start: number) => `contentkey-${channel}-${start}`;

/** Longest policy: 100 years, in seconds. */
export const MAX_AGE_SECONDS_LIMIT = 100 * 365 * 86_400;

/** A policy's age in seconds (a positive integer), or null to keep forever. */
export const MaxAgeSeconds = z.number().int().min(1).max(MAX_AGE_SECONDS_LIMIT).nullable();

/** What a policy applies to: the instance default, a server, or a server channel. */
export const RetentionScope = z.discriminatedUnion('type', [
  z.object({ type: z.literal('instance') }),
  z.object({ type: z.literal('server'), id: z.string() }),
  z.object({ type: z.literal('channel'), id: z.string() }),
]);
/** A policy's target. */
export type RetentionScope = z.infer<typeof RetentionScope>;

export const retentionEvents = {
  /** An admin (or the operator: actor null) set a policy; `max_age_seconds` null clears it (keep forever / inherit). */
  RetentionPolicySet: z.object({ scope: RetentionScope, max_age_seconds: MaxAgeSeconds }),
  /**
   * Every message of a channel's time bucket [from, to) is past its policy and none is held: the bucket's key
   * (`subject`) is destroyed after the append (and again by the projector), so their content is unreadable
   * in the log and in every backup taken from now on.
   */
  RetentionBucketShredded: z.object({ channel: z.string(), subject: z.string(), from: z.string(), to: z.string() }),
};
