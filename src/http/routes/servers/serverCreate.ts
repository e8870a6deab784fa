// POST /servers/create — {name, description?, nsfw?} → {server, channels}: a server with the text channel "General".
import { z } from 'zod';
import { decideCreateServer } from '../../../domain/server/createServer.ts';
import { presentChannel } from '../../../domain/channel/state.ts';
import { newId } from '../../../ids.ts';
import { loadChannel } from '../../../access.ts';
import { serverStream } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { description1024, name32 } from '../../schemas.ts';
import { currentServer } from './present.ts';
import { claimServerSlot, serverSlotStream } from './serverLimit.ts';

export default defineRoute({
  method: 'POST',
  path: '/servers/create',
  auth: 'user',
  noBots: true,
  body: z.strictObject({ name: name32, description: description1024.nullish(), nsfw: z.boolean().nullish() }),
  async handler({ deps, caller, meta, body }) {
    const serverId = newId();
    const channelId = newId();
    const stream = serverStream(serverId);
    await deps.executor.execute(meta, [stream, serverSlotStream(caller.userId)], async () => ({
      result: undefined,
      writes: [
        {
          stream,
          scope: serverId,
          expected: 'no_stream',
          events: decideCreateServer(
            { serverId, channelId, ownerId: caller.userId, name: body.name, description: body.description ?? undefined, nsfw: body.nsfw ?? undefined },
            null,
            { now: deps.executor.now() },
          ),
        },
        // The per-user server limit, decided under the revision of the user's slot stream (last: see claimServerSlot).
        await claimServerSlot(deps, caller.userId, serverId),
      ],
    }));
    const channel = await loadChannel(deps, channelId);
    return { server: await currentServer(deps, serverId), channels: channel ? [presentChannel(channel)] : [] };
  },
});
