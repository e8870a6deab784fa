/** Read-model shapes of moderation: the staff, a report (Stoat's `Report` plus its revision), a sanction, an audit entry. */
import type { ReportedContent, ReportSnapshot, InstanceRole } from './events.ts';

/** Stoat's report status. */
export type ReportStatus = 'Created' | 'Rejected' | 'Resolved';

/** A report as moderators read it: Stoat's `Report` (status flattened in), the snapshot and the stream revision. */
export interface ReportState {
  _id: string;
  author_id: string;
  content: ReportedContent;
  additional_context: string;
  status: ReportStatus;
  rejection_reason?: string;
  closed_at?: string;
  notes: string;
  snapshot: ReportSnapshot;
  created_at: string;
  revision: number;
}

/** An account's sanction standing (`none` once lifted: the read model keeps the stream revision). */
export interface SanctionState {
  kind: 'suspended' | 'banned' | 'none';
  /** ISO time a suspension ends; null = until lifted. Bans never end by themselves. */
  until: string | null;
  reason: string;
  actor: string | null;
  at: string;
  revision: number;
}

/** Whether a sanction keeps the account out at `nowMs`. */
export function sanctionActive(s: SanctionState | null, nowMs: number): boolean {
  if (!s || s.kind === 'none') return false;
  if (s.kind === 'banned' || s.until === null) return true;
  return Date.parse(s.until) > nowMs;
}

/** One entry of the instance audit log. */
export interface InstanceAuditEntry {
  /** The event id (kept across store migrations, so rebuilds reproduce it). */
  id: string;
  action: string;
  /** Who did it (null: the operator, through the command line). */
  actor: string | null;
  target: { type: 'User' | 'Report' | 'Message' | 'Server' | 'Hold' | 'Channel' | 'Instance'; id: string };
  reason: string | null;
  at: string;
  /** Action-specific details (the role granted, the suspension's end, the message's channel …). */
  details: Record<string, unknown>;
}

/** The staff: user id → role. */
export type Staff = Map<string, InstanceRole>;
