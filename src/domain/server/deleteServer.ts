/** DeleteServer: the owner deletes the server; any other member leaves it (reference §3.5). */
import type { DomainEvent } from '../events.ts';
import type { CallerContext } from './caller.ts';
import type { ServerView } from './state.ts';

/** Input of DeleteServer. */
export interface DeleteServer {
  /** `leave_silently`: no system message for the departure. */
  silent: boolean;
}

/** Owner → ServerDeleted (listing its channels); member → MemberLeft with reason Leave. */
export function decideDeleteServer(cmd: DeleteServer, view: ServerView, ctx: CallerContext): DomainEvent[] {
  if (ctx.caller.isOwner) return [{ type: 'ServerDeleted', data: { channels: [...view.server.channels] } }];
  return [{ type: 'MemberLeft', data: { userId: ctx.caller.userId, reason: 'Leave', ...(cmd.silent ? { silent: true } : {}) } }];
}
