/**
 * Pure decisions of instance moderation. Who may act: any staff member (moderator or admin) reads and triages
 * reports, suspends accounts and deletes content; only an admin bans or lifts a sanction. Nobody acts on
 * themselves; a moderator never acts on staff, an admin never on another admin.
 */
import { AppError } from '../../errors.ts';
import type { DomainEvent } from '../events.ts';
import type { InstanceRole, ReportedContent, ReportSnapshot } from './events.ts';
import type { ReportState, ReportStatus, SanctionState } from './state.ts';

/** Staff only (403 NotPrivileged otherwise); `admin` needs the admin role. */
export function requireStaff(role: InstanceRole | null, need: InstanceRole = 'moderator'): InstanceRole {
  if (role === null) throw new AppError({ type: 'NotPrivileged' });
  if (need === 'admin' && role !== 'admin') throw new AppError({ type: 'NotPrivileged' });
  return role;
}

/** Whether `actor` (with `actorRole`) may sanction `target` (with `targetRole`). */
export function checkSanctionTarget(actorId: string, actorRole: InstanceRole, targetId: string, targetRole: InstanceRole | null): void {
  if (actorId === targetId) throw new AppError({ type: 'InvalidOperation' });
  if (targetRole === 'admin' || (targetRole === 'moderator' && actorRole !== 'admin')) throw new AppError({ type: 'NotPrivileged' });
}

/** A report: never of one's own content. */
export function decideReport(
  cmd: { id: string; authorId: string; content: ReportedContent; additionalContext: string },
  facts: { contentOwner: string; snapshot: ReportSnapshot },
): DomainEvent[] {
  if (facts.contentOwner === cmd.authorId) throw new AppError({ type: 'CannotReportYourself' });
  return [
    {
      type: 'ReportCreated',
      data: { id: cmd.id, author_id: cmd.authorId, content: cmd.content, additional_context: cmd.additionalContext, snapshot: facts.snapshot },
    },
  ];
}

/** Triage of a report: notes and/or a status change (Rejected needs a rejection reason); no change appends nothing. */
export function decideTriage(
  report: ReportState,
  cmd: { status?: ReportStatus | undefined; rejection_reason?: string | undefined; notes?: string | undefined; reason?: string | undefined },
): DomainEvent[] {
  const events: DomainEvent[] = [];
  if (cmd.notes !== undefined && cmd.notes !== report.notes) events.push({ type: 'ReportNotesEdited', data: { notes: cmd.notes } });
  if (cmd.rejection_reason !== undefined && cmd.status !== 'Rejected') throw new AppError({ type: 'FailedValidation', error: 'body.rejection_reason: only with status Rejected' });
  if (cmd.status !== undefined && cmd.status !== report.status) {
    if (cmd.status === 'Rejected') {
      if (cmd.rejection_reason === undefined) throw new AppError({ type: 'FailedValidation', error: 'body.rejection_reason: required with status Rejected' });
      events.push({ type: 'ReportRejected', data: { rejection_reason: cmd.rejection_reason } });
    } else if (cmd.status === 'Resolved') {
      events.push({ type: 'ReportResolved', data: cmd.reason !== undefined ? { reason: cmd.reason } : {} });
    } else {
      events.push({ type: 'ReportReopened', data: {} });
    }
  }
  return events;
}

/** A suspension (`until` null = until lifted). A ban stands: suspending a banned account changes nothing (NoEffect). */
export function decideSuspend(current: SanctionState | null, cmd: { userId: string; until: string | null; reason: string }): DomainEvent[] {
  if (current?.kind === 'banned') throw new AppError({ type: 'NoEffect' });
  return [{ type: 'AccountSuspended', data: { userId: cmd.userId, until: cmd.until, reason: cmd.reason } }];
}

/** A ban (admins). Banning a banned account → NoEffect. */
export function decideBan(current: SanctionState | null, cmd: { userId: string; reason: string }): DomainEvent[] {
  if (current?.kind === 'banned') throw new AppError({ type: 'NoEffect' });
  return [{ type: 'AccountBanned', data: { userId: cmd.userId, reason: cmd.reason } }];
}

/** Deleting an account for abuse (admins): a deleted account → NoEffect; a bot's account is its owner's to delete. */
export function decideAccountDeletion(account: { deleted?: boolean; bot?: unknown }, cmd: { userId: string; reason: string }): DomainEvent[] {
  if (account.deleted) throw new AppError({ type: 'NoEffect' });
  if (account.bot) throw new AppError({ type: 'InvalidOperation' });
  return [{ type: 'ModeratorDeletedAccount', data: { userId: cmd.userId, reason: cmd.reason } }];
}

/** Lifting (admins). Nothing standing → NoEffect. */
export function decideLift(current: SanctionState | null, cmd: { userId: string; reason: string }): DomainEvent[] {
  if (!current || current.kind === 'none') throw new AppError({ type: 'NoEffect' });
  return [{ type: 'AccountSanctionLifted', data: { userId: cmd.userId, reason: cmd.reason } }];
}

/** Staff of the `instance-staff` stream folded from its events (the command line reads the log, not Redis). */
export function foldStaff(events: ReadonlyArray<{ type: string; data: unknown }>): Map<string, InstanceRole> {
  const staff = new Map<string, InstanceRole>();
  for (const e of events) {
    const d = e.data as { userId: string; role?: InstanceRole };
    if (e.type === 'InstanceRoleGranted') staff.set(d.userId, d.role!);
    else if (e.type === 'InstanceRoleRevoked') staff.delete(d.userId);
  }
  return staff;
}
