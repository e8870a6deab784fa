/** CreateInvite: POST /channels/:id/invites (reference §3.6). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { requireAll } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { CallerContext } from './caller.ts';
import type { ServerView } from './state.ts';

/** Input of CreateInvite. */
export interface CreateInvite {
  /** A fresh invite code (`newInviteCode`). */
  code: string;
  channelId: string;
}

/** ViewChannel and InviteOthers in the channel (the caller's channel-level value); the channel must be the server's. */
export function decideCreateInvite(cmd: CreateInvite, view: ServerView, ctx: CallerContext): DomainEvent[] {
  if (!view.server.channels.includes(cmd.channelId)) throw new AppError({ type: 'NotFound' });
  requireAll(ctx.caller.permissions, Permission.ViewChannel, Permission.InviteOthers);
  return [
    {
      type: 'InviteCreated',
      data: { invite: { type: 'Server', _id: cmd.code, server: view.server._id, creator: ctx.caller.userId, channel: cmd.channelId } },
    },
  ];
}
