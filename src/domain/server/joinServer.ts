/** JoinServer: a user joins through an invite (reference §3.8). */
import { AppError } from '../../errors.ts';
import type { DomainEvent } from '../events.ts';
import type { MemberObject } from '../models.ts';
import type { ServerView } from './state.ts';

/** The moderation a member keeps across leave and rejoin (Stoat keeps a departed member's timeout too). */
export type Moderation = Pick<MemberObject, 'timeout' | 'can_publish' | 'can_receive'>;

/** The moderation of a member worth remembering when they leave, or undefined when there is none. */
export function moderationOf(member: MemberObject): Moderation | undefined {
  const m: Moderation = {};
  if (member.timeout !== undefined) m.timeout = member.timeout;
  if (member.can_publish === false) m.can_publish = false;
  if (member.can_receive === false) m.can_receive = false;
  return Object.keys(m).length > 0 ? m : undefined;
}

/** Input of JoinServer. */
export interface JoinServer {
  userId: string;
  /** The invite code used. */
  invite: string;
}

/**
 * A banned user → 403 Banned; a member → 409 AlreadyInServer; else MemberJoined, carrying the moderation the
 * user had when they left (`departed`: a timeout still running, can_publish / can_receive false).
 */
export function decideJoinServer(cmd: JoinServer, view: ServerView, ctx: { now: Date; departed?: Moderation | null }): DomainEvent[] {
  if (Object.hasOwn(view.bans, cmd.userId)) throw new AppError({ type: 'Banned' });
  if (Object.hasOwn(view.members, cmd.userId)) throw new AppError({ type: 'AlreadyInServer' });
  return [
    {
      type: 'MemberJoined',
      data: { member: { _id: { server: view.server._id, user: cmd.userId }, joined_at: ctx.now.toISOString(), ...restored(ctx.departed, ctx.now) }, invite: cmd.invite },
    },
  ];
}

function restored(departed: Moderation | null | undefined, now: Date): Moderation {
  if (!departed) return {};
  const m: Moderation = {};
  if (departed.timeout !== undefined && Date.parse(departed.timeout) > now.getTime()) m.timeout = departed.timeout;
  if (departed.can_publish === false) m.can_publish = false;
  if (departed.can_receive === false) m.can_receive = false;
  return m;
}
