/**
 * Events of instance moderation (DESIGN §6 "reports"): the instance staff (stream `instance-staff`, scope
 * `instance`), content reports (`report-<id>`, scope `instance`), sanctions of an account (`sanction-<userId>`,
 * scope = the user, so they project in the partition of the account and its sessions) and moderator actions on
 * content (`modaction-<id>`, scope `instance`, appended atomically with the content's own events). Every one
 * carries its actor in the metadata and, where the action needs one, its reason in `data` (and metadata).
 */
import { z } from 'zod';

/** Scope of the instance-wide moderation streams. */
export const INSTANCE_SCOPE = 'instance';
/** The stream of the instance staff. */
export const STAFF_STREAM = 'instance-staff';
/** The stream of one report. */
export const reportStream = (id: string) => `report-${id}`;
/** The stream of an account's sanctions. */
export const sanctionStream = (userId: string) => `sanction-${userId}`;
/** The stream of one moderator action on content. */
export const modActionStream = (id: string) => `modaction-${id}`;

/** Instance roles: moderators triage reports, suspend accounts and delete content; admins also ban and lift. */
export const InstanceRole = z.enum(['moderator', 'admin']);
/** One instance role. */
export type InstanceRole = z.infer<typeof InstanceRole>;

/** Stoat's `ContentReportReason` (message and server reports). */
export const ContentReportReason = z.enum([
  'NoneSpecified', 'Illegal', 'IllegalGoods', 'IllegalExtortion', 'IllegalPornography', 'IllegalHacking', 'ExtremeViolence',
  'PromotesHarm', 'UnsolicitedSpam', 'Raid', 'SpamAbuse', 'ScamsFraud', 'Malware', 'Harassment',
]);
/** Stoat's `UserReportReason`. */
export const UserReportReason = z.enum(['NoneSpecified', 'UnsolicitedSpam', 'SpamAbuse', 'InappropriateProfile', 'Impersonation', 'BanEvasion', 'Underage']);

/** Stoat's `ReportedContent`. */
export const ReportedContent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('Message'), id: z.string().min(1).max(64), report_reason: ContentReportReason }).strict(),
  z.object({ type: z.literal('Server'), id: z.string().min(1).max(64), report_reason: ContentReportReason }).strict(),
  z.object({ type: z.literal('User'), id: z.string().min(1).max(64), report_reason: UserReportReason, message_id: z.string().min(1).max(64).nullable().optional() }).strict(),
]);
/** What a report is about. */
export type ReportedContent = z.infer<typeof ReportedContent>;

/** What the reported content looked like when it was reported (moderators judge what was reported, not what it became). */
export const ReportSnapshot = z.union([
  z.object({ _type: z.literal('Message'), channel: z.string(), server: z.string().nullable(), author: z.string(), content: z.string().nullable() }),
  z.object({ _type: z.literal('Server'), name: z.string(), owner: z.string() }),
  z.object({ _type: z.literal('User'), username: z.string(), discriminator: z.string(), display_name: z.string().nullable() }),
]);
/** A snapshot of reported content. */
export type ReportSnapshot = z.infer<typeof ReportSnapshot>;

/** Reason of a moderator action: 1–512 code points. */
export const ModReason = z.string().refine((s) => s.trim().length > 0 && [...s].length <= 512, 'a reason of 1–512 characters');

export const moderationEvents = {
  /** An operator granted an instance role (by `npm run accounts -- admin grant`). */
  InstanceRoleGranted: z.object({ userId: z.string(), role: InstanceRole }),
  /** An operator revoked a user's instance role. */
  InstanceRoleRevoked: z.object({ userId: z.string() }),
  /** A user reported content. */
  ReportCreated: z.object({
    id: z.string(),
    author_id: z.string(),
    content: ReportedContent,
    additional_context: z.string(),
    snapshot: ReportSnapshot,
  }),
  /** A moderator wrote the report's triage notes. */
  ReportNotesEdited: z.object({ notes: z.string() }),
  /** A moderator resolved the report (action was taken). */
  ReportResolved: z.object({ reason: z.string().optional() }),
  /** A moderator rejected the report (no action). */
  ReportRejected: z.object({ rejection_reason: z.string() }),
  /** A moderator opened a closed report again. */
  ReportReopened: z.object({}),
  /** A moderator suspended an account instance-wide, until a time or indefinitely; its sessions end. */
  AccountSuspended: z.object({ userId: z.string(), until: z.string().nullable(), reason: z.string() }),
  /** An admin banned an account instance-wide; its sessions end. */
  AccountBanned: z.object({ userId: z.string(), reason: z.string() }),
  /** An admin lifted an account's suspension or ban. */
  AccountSanctionLifted: z.object({ userId: z.string(), reason: z.string() }),
  /** A moderator deleted a message (appended with its `MessageDeleted`); `server` is null for a DM or group message. */
  ModeratorDeletedMessage: z.object({ message: z.string(), channel: z.string(), server: z.string().nullable(), author: z.string(), reason: z.string() }),
  /**
   * An admin deleted an account for abuse (appended with its `AccountDeleted`); everyone who shares something
   * with the user gets Stoat's `UserPlatformWipe` with its flag Deleted.
   */
  ModeratorDeletedAccount: z.object({ userId: z.string(), reason: z.string() }),
  /** A moderator deleted a whole server (appended with its `ServerDeleted`). */
  ModeratorDeletedServer: z.object({ server: z.string(), name: z.string(), owner: z.string(), reason: z.string() }),
};
