/**
 * The audience of a mass mention (role mentions, `@everyone`, `@online`): the members who can view the
 * channel at send time, with their roles and whether they are online. Loaded only for a message that has
 * such a mention and whose sender may make it (a refused send reads nothing more), so an ordinary send pays
 * nothing for it. One HGETALL of the members and one HMGET of presence.
 */
import type { AnyChannelAccess } from '../../../access.ts';
import { recipientsOf } from '../../../domain/private/state.ts';
import type { MemberObject } from '../../../domain/models.ts';
import type { ParsedMentions } from '../../../domain/message/mentions.ts';
import { needsAudience, type AudienceMember } from '../../../domain/message/sendMessage.ts';
import { channelPermissionsOf } from '../../../domain/server/permissions.ts';
import { Permission } from '../../../permissions/bits.ts';
import { has } from '../../../permissions/calculate.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { AppDeps } from '../../deps.ts';

/** The audience, or undefined when the message has no mass mention the sender may make. */
export async function loadAudience(
  deps: Pick<AppDeps, 'readModels' | 'now'>,
  access: AnyChannelAccess,
  parsed: ParsedMentions | undefined,
): Promise<AudienceMember[] | undefined> {
  if (!parsed) return undefined;
  const serverRoles = new Set(access.kind === 'server' ? Object.keys(access.server.roles) : []);
  if (!needsAudience(parsed, serverRoles)) return undefined;
  // The decision refuses these without the bit: nothing to load for it.
  if ((parsed.everyone || parsed.online) && !has(access.permissions, Permission.MentionEveryone)) return undefined;
  if (parsed.roles.some((id) => serverRoles.has(id)) && !has(access.permissions, Permission.MentionRoles)) return undefined;
  const viewers: Array<{ userId: string; roles: string[] }> = [];
  if (access.kind === 'private') {
    // Every recipient of a DM or group sees it; private channels have no roles.
    for (const userId of recipientsOf(access.channel)) viewers.push({ userId, roles: [] });
  } else {
    const members = await deps.readModels.hgetallJson<MemberObject>(rm.serverMembers(access.server._id));
    const now = deps.now();
    for (const [userId, m] of members) {
      if (has(channelPermissionsOf(access.server, userId, m, access.channel, now), Permission.ViewChannel)) viewers.push({ userId, roles: m.roles ?? [] });
    }
  }
  const online = parsed.online && !parsed.everyone ? await deps.readModels.online(viewers.map((v) => v.userId)) : new Set<string>();
  return viewers.map((v) => ({ ...v, online: online.has(v.userId) }));
}
