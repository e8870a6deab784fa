// POST /channels/create — {name, description?, icon?, users, nsfw?} → the new Group channel (friends only; GROUP_SIZE_LIMIT).
import { z } from 'zod';
import { loadPrivateChannel, loadRelations } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import { decideCreateGroup } from '../../../domain/private/group.ts';
import { presentPrivateChannel } from '../../../domain/private/state.ts';
import { FileClaims, fileLocks } from '../../../files.ts';
import { newId } from '../../../ids.ts';
import { defineRoute } from '../../route.ts';
import { description1024, idString, name32 } from '../../schemas.ts';
import { channelStream } from '../../command.ts';

const Body = z.strictObject({
  name: name32,
  description: description1024.nullish(),
  /** An `icons` upload id (used once). */
  icon: idString.nullish(),
  /** Friends to add (Stoat: at most 49, distinct). */
  users: z.array(idString).max(49).default([]).refine((u) => new Set(u).size === u.length, 'users must be distinct'),
  nsfw: z.boolean().nullish(),
});

export default defineRoute({
  method: 'POST',
  path: '/channels/create',
  auth: 'user',
  noBots: true,
  body: Body,
  async handler(rc) {
    const { deps, body } = rc;
    const me = rc.caller.userId;
    const channelId = newId(deps.now());
    await deps.executor.execute(rc.meta, [channelStream(channelId), ...fileLocks(body.icon)], async () => {
      const relations = await loadRelations(deps, me);
      const events = decideCreateGroup(
        { channelId, ownerId: me, name: body.name, description: body.description ?? undefined, nsfw: body.nsfw ?? undefined, users: body.users },
        { relations, maxSize: deps.config.groupSizeLimit },
      );
      const files = new FileClaims(deps, me);
      const icon = await files.use(body.icon, 'icons', { type: 'ChannelIcon', id: channelId });
      if (icon) {
        const created = events[0]!;
        if (created.type === 'GroupCreated') created.data.channel.icon = icon;
      }
      return { writes: [{ stream: channelStream(channelId), scope: channelId, expected: 'no_stream' as const, events }, ...files.writes], result: undefined };
    });
    const channel = await loadPrivateChannel(deps, channelId);
    if (!channel) throw new AppError({ type: 'NotFound' });
    return presentPrivateChannel(channel);
  },
});
