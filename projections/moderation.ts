/**
 * Instance moderation: the staff (`instance:staff`), reports (`report:<id>`, `reports`, `reports:status:<s>`),
 * sanctions (`sanction:<userId>`) and the instance audit log (`instance:audit`, `instance:audit:index`).
 *
 * Partitions: staff, reports and moderator actions are scoped `instance` (one partition), so a report's
 * ReportCreate reads the staff it goes to in order. A sanction is scoped to its user, so it projects in the
 * partition of the account: it reads the account's sessions (same scope) and ends them — their session keys
 * go and `DeleteSession` closes their sockets — and a `SessionCreated` that raced with it (decided before the
 * sanction, appended after) is ended the same way. The sockets of a sanctioned bot, and of every bot a
 * sanctioned user owns, are closed too (their tokens stop working while the sanction stands). The audit log is written from both partitions with unique
 * keys only (commutative), so it rebuilds identically.
 */
import type { StoredEvent } from '../src/domain/events.ts';
import type { AccountState } from '../src/domain/account/state.ts';
import type { InstanceRole } from '../src/domain/moderation/events.ts';
import type { InstanceAuditEntry, ReportState, SanctionState } from '../src/domain/moderation/state.ts';
import { rm } from '../src/readmodel/keys.ts';

/** Stoat's user flag of a banned account (sent in UserPlatformWipe). */
const USER_FLAG_BANNED = 4;
import type { Projection, ProjectionTx } from './types.ts';
import { endBotSockets } from './accounts.ts';

/** The report as clients see it (Stoat's `Report`): no revision. */
export function presentReport(r: ReportState): Omit<ReportState, 'revision'> {
  const { revision: _revision, ...rest } = r;
  return rest;
}

/** Writes one entry of the instance audit log (keyed by the event, so a rebuild writes the same). */
export function audit(tx: ProjectionTx, e: StoredEvent, entry: Omit<InstanceAuditEntry, 'id' | 'actor' | 'at'>): void {
  const full: InstanceAuditEntry = { id: e.id, actor: e.metadata.actor, at: e.metadata.at, ...entry };
  const member = `${e.metadata.at}|${e.id}`;
  tx.hsetJson(rm.instanceAudit(), member, full);
  tx.zadd(rm.instanceAuditIndex(), 0, member);
}

async function endSessions(tx: ProjectionTx, userId: string, only?: string): Promise<void> {
  const account = await tx.getJson<AccountState>(rm.account(userId));
  if (!account) return;
  for (const [sessionId, s] of Object.entries(account.sessions)) {
    if (only !== undefined && sessionId !== only) continue;
    tx.del(rm.session(s.tokenHash));
    tx.emit({ kind: 'user', userId }, { type: 'DeleteSession', user_id: userId, session_id: sessionId });
  }
}

async function updateReport(tx: ProjectionTx, e: StoredEvent, change: (r: ReportState) => void): Promise<ReportState | null> {
  const id = e.stream.slice('report-'.length);
  const r = await tx.getJson<ReportState>(rm.report(id));
  if (!r) return null;
  const before = r.status;
  change(r);
  r.revision = e.revision;
  tx.setJson(rm.report(id), r);
  if (before !== r.status) {
    tx.zrem(rm.reportIndex(before), id);
    tx.zadd(rm.reportIndex(r.status), 0, id);
  }
  return r;
}

export const moderationProjection: Projection = {
  name: 'moderation',
  handles: [
    'InstanceRoleGranted',
    'InstanceRoleRevoked',
    'ReportCreated',
    'ReportNotesEdited',
    'ReportResolved',
    'ReportRejected',
    'ReportReopened',
    'AccountSuspended',
    'AccountBanned',
    'AccountSanctionLifted',
    'ModeratorDeletedMessage',
    'ModeratorDeletedServer',
    'SessionCreated',
  ],
  async apply(e, tx) {
    switch (e.type) {
      case 'InstanceRoleGranted':
        tx.hsetJson(rm.instanceStaff(), e.data.userId, e.data.role);
        audit(tx, e, { action: 'InstanceRoleGrant', target: { type: 'User', id: e.data.userId }, reason: e.metadata.reason ?? null, details: { role: e.data.role } });
        break;
      case 'InstanceRoleRevoked':
        tx.hdel(rm.instanceStaff(), e.data.userId);
        audit(tx, e, { action: 'InstanceRoleRevoke', target: { type: 'User', id: e.data.userId }, reason: e.metadata.reason ?? null, details: {} });
        break;
      case 'ReportCreated': {
        const r: ReportState = {
          _id: e.data.id,
          author_id: e.data.author_id,
          content: e.data.content,
          additional_context: e.data.additional_context,
          status: 'Created',
          notes: '',
          snapshot: e.data.snapshot,
          created_at: e.metadata.at,
          revision: e.revision,
        };
        tx.setJson(rm.report(r._id), r);
        tx.zadd(rm.reportIndex(), 0, r._id);
        tx.zadd(rm.reportIndex('Created'), 0, r._id);
        // Stoat's ReportCreate, to every staff member's sockets.
        const staff = await tx.hgetallJson<InstanceRole>(rm.instanceStaff());
        for (const userId of staff.keys()) tx.emit({ kind: 'user', userId }, { type: 'ReportCreate', ...presentReport(r) });
        break;
      }
      case 'ReportNotesEdited': {
        const r = await updateReport(tx, e, (r) => (r.notes = e.data.notes));
        if (r) audit(tx, e, { action: 'ReportNotesEdit', target: { type: 'Report', id: r._id }, reason: e.metadata.reason ?? null, details: {} });
        break;
      }
      case 'ReportResolved': {
        const r = await updateReport(tx, e, (r) => {
          r.status = 'Resolved';
          r.closed_at = e.metadata.at;
          delete r.rejection_reason;
        });
        if (r) audit(tx, e, { action: 'ReportResolve', target: { type: 'Report', id: r._id }, reason: e.data.reason ?? e.metadata.reason ?? null, details: {} });
        break;
      }
      case 'ReportRejected': {
        const r = await updateReport(tx, e, (r) => {
          r.status = 'Rejected';
          r.closed_at = e.metadata.at;
          r.rejection_reason = e.data.rejection_reason;
        });
        if (r) audit(tx, e, { action: 'ReportReject', target: { type: 'Report', id: r._id }, reason: e.data.rejection_reason, details: {} });
        break;
      }
      case 'ReportReopened': {
        const r = await updateReport(tx, e, (r) => {
          r.status = 'Created';
          delete r.closed_at;
          delete r.rejection_reason;
        });
        if (r) audit(tx, e, { action: 'ReportReopen', target: { type: 'Report', id: r._id }, reason: e.metadata.reason ?? null, details: {} });
        break;
      }
      case 'AccountSuspended':
      case 'AccountBanned': {
        const s: SanctionState = {
          kind: e.type === 'AccountBanned' ? 'banned' : 'suspended',
          until: e.type === 'AccountSuspended' ? e.data.until : null,
          reason: e.data.reason,
          actor: e.metadata.actor,
          at: e.metadata.at,
          revision: e.revision,
        };
        tx.setJson(rm.sanction(e.data.userId), s);
        await endSessions(tx, e.data.userId);
        await endBotSockets(tx, e.data.userId);
        // Stoat's UserPlatformWipe (flags: its user flag Banned): everyone who shares a server, a DM or group,
        // or a relationship with a banned user drops their messages (the hub finds them).
        if (e.type === 'AccountBanned') tx.emit({ kind: 'userPresence', userId: e.data.userId }, { type: 'UserPlatformWipe', user_id: e.data.userId, flags: USER_FLAG_BANNED });
        audit(tx, e, {
          action: e.type === 'AccountBanned' ? 'AccountBan' : 'AccountSuspend',
          target: { type: 'User', id: e.data.userId },
          reason: e.data.reason,
          details: e.type === 'AccountSuspended' ? { until: e.data.until } : {},
        });
        break;
      }
      case 'AccountSanctionLifted':
        tx.setJson(rm.sanction(e.data.userId), { kind: 'none', until: null, reason: e.data.reason, actor: e.metadata.actor, at: e.metadata.at, revision: e.revision } satisfies SanctionState);
        audit(tx, e, { action: 'AccountSanctionLift', target: { type: 'User', id: e.data.userId }, reason: e.data.reason, details: {} });
        break;
      case 'ModeratorDeletedMessage':
        audit(tx, e, {
          action: 'MessageDelete',
          target: { type: 'Message', id: e.data.message },
          reason: e.data.reason,
          details: { channel: e.data.channel, server: e.data.server, author: e.data.author },
        });
        break;
      case 'ModeratorDeletedServer':
        audit(tx, e, { action: 'ServerDelete', target: { type: 'Server', id: e.data.server }, reason: e.data.reason, details: { name: e.data.name, owner: e.data.owner } });
        break;
      case 'SessionCreated': {
        // A login decided before a sanction and appended after it: end that session too. (The accounts
        // projection ran first for this event, so the session is in the account state.)
        if (!e.stream.startsWith('account-')) break;
        const userId = e.stream.slice('account-'.length);
        const s = await tx.getJson<SanctionState>(rm.sanction(userId));
        if (s && s.kind !== 'none' && (s.kind === 'banned' || s.until === null || Date.parse(s.until) > Date.parse(e.metadata.at))) {
          await endSessions(tx, userId, e.data.sessionId);
        }
        break;
      }
      default:
        break;
    }
  },
};
