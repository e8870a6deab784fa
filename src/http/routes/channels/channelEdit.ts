// PATCH /channels/:channel_id — {name?, description?, icon?, nsfw?, voice?, slowmode?, remove?} → Channel (ViewChannel, ManageChannel).
import { z } from 'zod';
import { callerFromChannel, loadPrivateChannel } from '../../../access.ts';
import { editPrivateChannel } from '../groups/private.ts';
import { decideEditChannel, SLOWMODE_MAX_SECONDS } from '../../../domain/channel/editChannel.ts';
import { FileClaims, fileLocks } from '../../../files.ts';
import { Permission } from '../../../permissions/bits.ts';
import { require as requirePermission } from '../../../permissions/calculate.ts';
import { onChannel } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { description1024, idString, name32, removeChannel, voiceSettings } from '../../schemas.ts';
import { currentChannel } from './present.ts';

const Body = z.strictObject({
  name: name32.nullish(),
  description: description1024.nullish(),
  /** An `icons` upload id (used once). */
  icon: idString.nullish(),
  /** Group channels only: 400 InvalidOperation on a server channel. */
  owner: idString.nullish(),
  nsfw: z.boolean().nullish(),
  /** Accepted and ignored, as in Revolt. */
  archived: z.boolean().nullish(),
  voice: voiceSettings.nullish(),
  /** Seconds between a member's messages, up to six hours (Stoat's bounds); server channels only. */
  slowmode: z.number().int().min(0).max(SLOWMODE_MAX_SECONDS).nullish(),
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
    if (await loadPrivateChannel(deps, channelId)) return editPrivateChannel(rc, channelId, body);
    await onChannel(
      rc,
      channelId,
      'channel',
      async (a) => {
        requirePermission(a.permissions, Permission.ViewChannel);
        const files = new FileClaims(deps, rc.caller.userId);
        const icon = await files.use(body.icon, 'icons', { type: 'ChannelIcon', id: channelId });
        const events = decideEditChannel(
          {
            name: body.name ?? undefined,
            description: body.description ?? undefined,
            icon,
            nsfw: body.nsfw ?? undefined,
            voice: body.voice ? { max_users: body.voice.max_users ?? undefined } : undefined,
            slowmode: body.slowmode ?? undefined,
            owner: body.owner ?? undefined,
            remove: body.remove ?? [],
          },
          a.channel,
          { caller: callerFromChannel(a, rc.caller.userId), voiceEnabled: deps.config.voice.enabled },
        );
        return { events, also: files.writes };
      },
      { lock: fileLocks(body.icon) },
    );
    return currentChannel(deps, channelId);
  },
});
