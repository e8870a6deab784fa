// PATCH /channels/:channel_id — {name?, description?, nsfw?, voice?, remove?} → Channel (ViewChannel, ManageChannel).
import { z } from 'zod';
import { callerFromChannel } from '../../../access.ts';
import { decideEditChannel } from '../../../domain/channel/editChannel.ts';
import { Permission } from '../../../permissions/bits.ts';
import { require as requirePermission } from '../../../permissions/calculate.ts';
import { onChannel } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { description1024, idString, name32, removeChannel, voiceSettings } from '../../schemas.ts';
import { currentChannel } from './present.ts';

// icon (an upload with the tag `icons`) arrives with the media feature.
const Body = z.strictObject({
  name: name32.nullish(),
  description: description1024.nullish(),
  /** Group channels only: 400 InvalidOperation on a server channel. */
  owner: idString.nullish(),
  nsfw: z.boolean().nullish(),
  /** Accepted and ignored, as in Revolt. */
  archived: z.boolean().nullish(),
  voice: voiceSettings.nullish(),
  remove: removeChannel.nullish(),
});

export default defineRoute({
  method: 'PATCH',
  path: '/channels/:channel_id',
  auth: 'user',
  body: Body,
  permissions: ['ViewChannel', 'ManageChannel'],
  async handler(rc) {
    const { body, deps } = rc;
    const channelId = rc.params.channel_id!;
    await onChannel(rc, channelId, 'channel', (a) => {
      requirePermission(a.permissions, Permission.ViewChannel);
      return decideEditChannel(
        {
          name: body.name ?? undefined,
          description: body.description ?? undefined,
          nsfw: body.nsfw ?? undefined,
          voice: body.voice ? { max_users: body.voice.max_users ?? undefined } : undefined,
          owner: body.owner ?? undefined,
          remove: body.remove ?? [],
        },
        a.channel,
        { caller: callerFromChannel(a, rc.caller.userId), voiceEnabled: deps.config.voice.enabled },
      );
    });
    return currentChannel(deps, channelId);
  },
});
