/** CreateServer: a new server with the text channel "General"; the owner becomes its first member. */
import { AppError } from '../../errors.ts';
import { DEFAULT_PERMISSION_SERVER, toNumber } from '../../permissions/bits.ts';
import type { DomainEvent } from '../events.ts';
import type { ServerChannelObject } from '../models.ts';
import type { ServerState } from './state.ts';

/** Input of CreateServer (validated by the route). */
export interface CreateServer {
  serverId: string;
  /** Id of the "General" channel. */
  channelId: string;
  ownerId: string;
  name: string;
  description?: string | undefined;
  nsfw?: boolean | undefined;
}

/** Decides a server creation: ServerCreated (with "General") and the owner's MemberJoined. */
export function decideCreateServer(cmd: CreateServer, state: ServerState | null, ctx: { now: Date }): DomainEvent[] {
  if (state) throw new AppError({ type: 'InvalidOperation' });
  const general: ServerChannelObject = { channel_type: 'TextChannel', _id: cmd.channelId, server: cmd.serverId, name: 'General' };
  return [
    {
      type: 'ServerCreated',
      data: {
        server: {
          _id: cmd.serverId,
          owner: cmd.ownerId,
          name: cmd.name,
          ...(cmd.description !== undefined ? { description: cmd.description } : {}),
          ...(cmd.nsfw ? { nsfw: true as const } : {}),
          default_permissions: toNumber(DEFAULT_PERMISSION_SERVER),
        },
        channels: [general],
      },
    },
    { type: 'MemberJoined', data: { member: { _id: { server: cmd.serverId, user: cmd.ownerId }, joined_at: ctx.now.toISOString() } } },
  ];
}
