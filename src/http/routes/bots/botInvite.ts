// POST /bots/:target/invite — {server} (ManageServer there) or {group} (InviteOthers there) → 204; a private bot only by its owner (403 BotIsPrivate).
import { z } from 'zod';
import { loadMember, loadRelations, serverAccess } from '../../../access.ts';
import type { ServerBanObject } from '../../../domain/models.ts';
import { decideAddGroupMember } from '../../../domain/private/group.ts';
import { decideJoinServer, type Moderation } from '../../../domain/server/joinServer.ts';
import type { DomainEvent } from '../../../domain/events.ts';
import { AppError } from '../../../errors.ts';
import { Permission } from '../../../permissions/bits.ts';
import { require as requirePermission } from '../../../permissions/calculate.ts';
import { rm } from '../../../readmodel/keys.ts';
import { onServer } from '../../command.ts';
import { idString } from '../../schemas.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { groupOf, idSource, onPrivateChannel } from '../groups/command.ts';
import { assertServerSlot } from '../servers/serverLimit.ts';
import { loadBot } from './load.ts';

const Body = z.union([z.strictObject({ server: idString }), z.strictObject({ group: idString })]);

export default defineRoute({
  method: 'POST',
  path: '/bots/:target/invite',
  auth: 'user',
  noBots: true,
  body: Body,
  permissions: ['ManageServer'],
  async handler(rc) {
    const { deps, caller, body, params } = rc;
    const bot = await loadBot(deps, params.target!);
    if (!bot) throw new AppError({ type: 'NotFound' });
    if (!bot.bot.public && bot.bot.owner !== caller.userId) throw new AppError({ type: 'BotIsPrivate' });
    const botId = bot.userId;
    if ('server' in body) {
      const serverId = body.server;
      await onServer(rc, serverId, async (a) => {
        requirePermission(a.permissions, Permission.ManageServer);
        const member = await loadMember(deps, serverId, botId);
        if (!member) await assertServerSlot(deps, botId);
        const ban = await deps.readModels.hgetJson<ServerBanObject>(rm.serverBans(serverId), botId);
        const departed = await deps.readModels.hgetJson<Moderation>(rm.serverDeparted(serverId), botId);
        const joined = decideJoinServer(
          { userId: botId, invite: '' },
          { server: a.server, members: member ? { [botId]: member } : {}, bans: ban ? { [botId]: ban } : {} },
          { now: deps.executor.now(), departed },
        );
        // Added by the inviter rather than through an invite code: the event names who (the audit log's BotAdd).
        return joined.map((e): DomainEvent => (e.type === 'MemberJoined' ? { type: 'MemberJoined', data: { member: e.data.member, by: caller.userId } } : e));
      });
      return NO_CONTENT;
    }
    await onPrivateChannel(rc, body.group, async (a) => {
      const group = groupOf(a);
      requirePermission(a.permissions, Permission.InviteOthers);
      const relations = await loadRelations(deps, caller.userId);
      // A bot needs no friendship to be added (Stoat): it counts as a friend for this decision only.
      return decideAddGroupMember(group, botId, {
        callerId: caller.userId,
        permissions: a.permissions,
        relations: { ...relations, relations: { ...relations.relations, [botId]: 'Friend' } },
        maxSize: deps.config.groupSizeLimit,
        newId: idSource(rc),
      });
    });
    return NO_CONTENT;
  },
});
