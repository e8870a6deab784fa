/** JoinServer: a user joins through an invite (reference §3.8). */
import { AppError } from '../../errors.ts';
import type { DomainEvent } from '../events.ts';
import type { ServerView } from './state.ts';

/** Input of JoinServer. */
export interface JoinServer {
  userId: string;
  /** The invite code used. */
  invite: string;
}

/** A banned user → 403 Banned; a member → 409 AlreadyInServer; else MemberJoined. */
export function decideJoinServer(cmd: JoinServer, view: ServerView, ctx: { now: Date }): DomainEvent[] {
  if (Object.hasOwn(view.bans, cmd.userId)) throw new AppError({ type: 'Banned' });
  if (Object.hasOwn(view.members, cmd.userId)) throw new AppError({ type: 'AlreadyInServer' });
  return [
    {
      type: 'MemberJoined',
      data: { member: { _id: { server: view.server._id, user: cmd.userId }, joined_at: ctx.now.toISOString() }, invite: cmd.invite },
    },
  ];
}
