/** Revolt-shaped answers of the message routes, read from the read models after the write was projected. */
import type { AccessDeps } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import { SYSTEM_AUTHOR } from '../../../domain/message/events.ts';
import { presentMessage, type MessageState } from '../../../domain/message/state.ts';
import type { MemberObject } from '../../../domain/models.ts';
import { rm } from '../../../readmodel/keys.ts';
import { loadMessage } from '../../../readmodel/messages.ts';
import { presentUsers } from '../users/present.ts';

export { presentMessage };

/** The current message of a channel as Revolt's Message (404 when it is not there). */
export async function currentMessage(deps: AccessDeps, channelId: string, messageId: string): Promise<ReturnType<typeof presentMessage>> {
  const message = await loadMessage(deps.readModels, channelId, messageId);
  if (!message) throw new AppError({ type: 'NotFound' });
  return presentMessage(message);
}

/** The users (as seen by `viewerId`) and server members (none in a private channel) of the messages' authors, system author left out. */
export async function authorsOf(
  deps: AccessDeps,
  serverId: string | null,
  messages: ReadonlyArray<Pick<MessageState, 'author'>>,
  viewerId: string,
): Promise<{ users: Record<string, unknown>[]; members: MemberObject[] }> {
  const ids = [...new Set(messages.map((m) => m.author))].filter((id) => id !== SYSTEM_AUTHOR);
  const [profiles, members] = await Promise.all([
    deps.readModels.mgetJson<UserProfile>(ids.map((id) => rm.user(id))),
    serverId === null ? Promise.resolve([]) : deps.readModels.hmgetJson<MemberObject>(rm.serverMembers(serverId), ids),
  ]);
  return {
    users: await presentUsers(deps.readModels, profiles, viewerId),
    members: members.filter((m): m is MemberObject => m !== null),
  };
}
