// POST /servers/:server_id/channels — {type?, name, description?, nsfw?, voice?} → Channel (ManageChannel; SERVER_CHANNEL_LIMIT).
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { callerFromServer, loadChannel } from '../../../access.ts';
import { presentChannel } from '../../../domain/channel/state.ts';
import { decideCreateChannel } from '../../../domain/server/createChannel.ts';
import { newId } from '../../../ids.ts';
import { onServer } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { description1024, name32, voiceSettings } from '../../schemas.ts';

export default defineRoute({
  method: 'POST',
  path: '/servers/:server_id/channels',
  auth: 'user',
  body: z.strictObject({
    type: z.enum(['Text', 'Voice']).nullish(),
    name: name32,
    description: description1024.nullish(),
    nsfw: z.boolean().nullish(),
    voice: voiceSettings.nullish(),
  }),
  permissions: ['ManageChannel'],
  async handler(rc) {
    const { body, deps } = rc;
    const channelId = newId();
    await onServer(rc, rc.params.server_id!, (a) =>
      decideCreateChannel(
        {
          channelId,
          type: body.type ?? 'Text',
          name: body.name,
          description: body.description ?? undefined,
          nsfw: body.nsfw ?? undefined,
          voice: body.voice ? { max_users: body.voice.max_users ?? undefined } : undefined,
        },
        { server: a.server, members: {}, bans: {} },
        { caller: callerFromServer(a, rc.caller.userId), channelLimit: deps.config.serverChannelLimit, voiceEnabled: deps.config.voice.enabled },
      ),
    );
    const channel = await loadChannel(deps, channelId);
    if (!channel) throw new AppError({ type: 'NotFound' });
    return presentChannel(channel);
  },
});
