/** DeleteChannel: DELETE /channels/:id of a server channel (reference §3.6). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { requireAll } from '../../permissions/calculate.ts';
import type { DomainEvent } from '../events.ts';
import type { CallerContext } from './caller.ts';
import type { ServerView } from './state.ts';

/** Input of DeleteChannel. */
export interface DeleteChannel {
  channelId: string;
}

/** ViewChannel and ManageChannel in the channel (the caller's channel-level value); the channel must be the server's. */
export function decideDeleteChannel(cmd: DeleteChannel, view: ServerView, ctx: CallerContext): DomainEvent[] {
  if (!view.server.channels.includes(cmd.channelId)) throw new AppError({ type: 'NotFound' });
  requireAll(ctx.caller.permissions, Permission.ViewChannel, Permission.ManageChannel);
  return [{ type: 'ChannelDeleted', data: { channelId: cmd.channelId } }];
}
