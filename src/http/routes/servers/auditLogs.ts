// GET /servers/:server_id/audit_logs?limit&before&after&user&action — {audit_logs, users, members} (ViewAuditLogs).
import { z } from 'zod';
import { serverAccess } from '../../../access.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import { AUDIT_ACTIONS, auditEntryChannel, redactAuditEntry, type AuditEntry } from '../../../domain/audit/entries.ts';
import type { ChannelState } from '../../../domain/channel/state.ts';
import { channelPermissionsOf } from '../../../domain/server/permissions.ts';
import { has } from '../../../permissions/calculate.ts';
import type { MemberObject } from '../../../domain/models.ts';
import { isUlid } from '../../../ids.ts';
import { Permission } from '../../../permissions/bits.ts';
import { require as requirePermission } from '../../../permissions/calculate.ts';
import { rm } from '../../../readmodel/keys.ts';
import { queryInt } from '../../query.ts';
import { defineRoute } from '../../route.ts';
import { presentUsers } from '../users/present.ts';

/** Entries per page when `limit` is not given. */
export const AUDIT_DEFAULT_LIMIT = 50;

const ulid = (what: string) => z.string().refine(isUlid, `expected ${what} (a 26-character ULID)`);

export default defineRoute({
  method: 'GET',
  path: '/servers/:server_id/audit_logs',
  auth: 'user',
  /**
   * `limit` 1–100 (default 50); `before` / `after`: entry ids (exclusive bounds); `user`: only this actor's
   * entries; `action`: only this action (one of `AUDIT_ACTIONS`). Newest first. With `after` and no `before`
   * the page is the `limit` entries right after `after` (paging towards newer entries); otherwise the
   * newest `limit` entries below `before` (or of all).
   */
  query: z.object({
    limit: queryInt(1, 100).optional(),
    before: ulid('an entry id').optional(),
    after: ulid('an entry id').optional(),
    user: ulid('a user id').optional(),
    action: z.enum(AUDIT_ACTIONS).optional(),
  }),
  permissions: ['ViewAuditLogs'],
  async handler({ deps, caller, params, query }) {
    const a = await serverAccess(deps, params.server_id!, caller.userId);
    requirePermission(a.permissions, Permission.ViewAuditLogs);
    const serverId = a.server._id;
    const limit = query.limit ?? AUDIT_DEFAULT_LIMIT;
    const index = rm.auditIndex(serverId, { user: query.user, action: query.action });
    const min = query.after !== undefined ? `(${query.after}` : '-';
    const max = query.before !== undefined ? `(${query.before}` : '+';
    const ids =
      query.after !== undefined && query.before === undefined
        ? (await deps.readModels.zrangeByLex(index, min, max, limit)).reverse()
        : await deps.readModels.zrangeByLex(index, min, max, limit, true);
    const stored = (await deps.readModels.hmgetJson<AuditEntry>(rm.auditEntries(serverId), ids)).filter((e): e is AuditEntry => e !== null);

    // Entries of a channel the reader cannot view (ViewChannel, as they would see it now) are redacted: a
    // deleted message's content, a hidden channel's name … stay hidden. A deleted channel is judged by its
    // overrides as they last were; a channel known to neither is treated as hidden.
    const channelIds = [...new Set(stored.map(auditEntryChannel).filter((id): id is string => id !== undefined))];
    type Overrides = Pick<ChannelState, 'default_permissions' | 'role_permissions'>;
    const live = await deps.readModels.mgetJson<ChannelState>(channelIds.map((id) => rm.channel(id)));
    const gone = await deps.readModels.hmgetJson<Overrides>(rm.auditGoneChannels(serverId), channelIds);
    const now = deps.now();
    const visible = new Map<string, boolean>();
    channelIds.forEach((id, i) => {
      const current = live[i];
      const overrides = current && current.server === serverId ? current : gone[i];
      visible.set(id, overrides != null && has(channelPermissionsOf(a.server, caller.userId, a.member, overrides, now), Permission.ViewChannel));
    });
    const audit_logs = stored.map((e) => {
      const channel = auditEntryChannel(e);
      return channel === undefined || visible.get(channel) === true ? e : redactAuditEntry(e);
    });

    // The users an entry names: its actor, a user target, a message's author, a reaction's user.
    const named = (e: AuditEntry) => [e.actor, e.target.type === 'User' ? e.target.id : null, e.context?.author ?? null, e.context?.user ?? null];
    const userIds = [...new Set(audit_logs.flatMap(named).filter((id): id is string => id !== null))];
    const profiles = await deps.readModels.mgetJson<UserProfile>(userIds.map((id) => rm.user(id)));
    const users = await presentUsers(deps.readModels, profiles, caller.userId);
    const members = (await deps.readModels.hmgetJson<MemberObject>(rm.serverMembers(serverId), userIds)).filter((m): m is MemberObject => m !== null);
    return { audit_logs, users, members };
  },
});
