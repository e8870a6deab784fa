// PATCH /servers/:server_id — name, description, icon, banner, categories, system_messages, analytics, remove (flags, discoverable: instance admins) → the full Server.
import { z } from 'zod';
import { callerFromServer, loadServer } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import { decideEditServer } from '../../../domain/server/editServer.ts';
import { FileClaims, fileLocks } from '../../../files.ts';
import { onServer, serverStream } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { defined, description1024, idString, name32, removeServer } from '../../schemas.ts';
import { instanceRole } from '../admin/staff.ts';
import { currentServer } from './present.ts';
import { MAX_SERVER_CHANNEL_LIMIT } from '../../../config.ts';

const Body = z.strictObject({
  name: name32.nullish(),
  description: description1024.nullish(),
  /** An `icons` upload id (used once). */
  icon: idString.nullish(),
  /** A `banners` upload id (used once). */
  banner: idString.nullish(),
  /** At most SERVER_CHANNEL_LIMIT categories and channel ids across them (the decision); the absolute cap here bounds parsing. */
  categories: z.array(z.strictObject({ id: name32, title: name32, channels: z.array(idString).max(MAX_SERVER_CHANNEL_LIMIT) })).max(MAX_SERVER_CHANNEL_LIMIT).nullish(),
  system_messages: z
    .strictObject({
      user_joined: idString.nullish(),
      user_left: idString.nullish(),
      user_kicked: idString.nullish(),
      user_banned: idString.nullish(),
    })
    .nullish(),
  /** Instance admins only (403 NotPrivileged): 1 Verified, 2 Official. */
  flags: z.number().int().nullish(),
  /** Instance admins only (403 NotPrivileged). */
  discoverable: z.boolean().nullish(),
  analytics: z.boolean().nullish(),
  remove: removeServer.nullish(),
});

export default defineRoute({
  method: 'PATCH',
  path: '/servers/:server_id',
  auth: 'user',
  body: Body,
  permissions: ['ManageServer', 'ManageChannel'],
  async handler(rc) {
    const { body, params, caller, deps } = rc;
    const serverId = params.server_id!;
    const privileged = body.flags != null || body.discoverable != null ? (await instanceRole(deps, caller.userId)) === 'admin' : false;
    const staffOnly = Object.entries(body).every(([k, v]) => v == null || k === 'flags' || k === 'discoverable');
    if (privileged && staffOnly) {
      // As Stoat, a privileged user sets these on any server, a member or not: no server permission is involved.
      const stream = serverStream(serverId);
      await deps.executor.execute(rc.meta, [stream], async () => {
        const server = await loadServer(deps, serverId);
        if (!server) throw new AppError({ type: 'NotFound' });
        const staff = { userId: caller.userId, permissions: 0n, ranking: Number.MAX_SAFE_INTEGER, isOwner: false };
        const events = decideEditServer({ flags: body.flags ?? undefined, discoverable: body.discoverable ?? undefined, remove: [] }, { server, members: {}, bans: {} }, { caller: staff, privileged });
        return { writes: [{ stream, scope: serverId, expected: server.revision, events }], result: undefined };
      });
      return currentServer(deps, serverId);
    }
    // The uploads are claimed inside the decision: appended with the edit, or not at all.
    await onServer(
      rc,
      serverId,
      async (a) => {
        const files = new FileClaims(deps, caller.userId);
        const icon = await files.use(body.icon, 'icons', { type: 'ServerIcon', id: serverId });
        const banner = await files.use(body.banner, 'banners', { type: 'ServerBanner', id: serverId });
        const events = decideEditServer(
          {
            name: body.name ?? undefined,
            description: body.description ?? undefined,
            icon,
            banner,
            categories: body.categories ?? undefined,
            system_messages: body.system_messages ? defined(body.system_messages) : undefined,
            analytics: body.analytics ?? undefined,
            flags: body.flags ?? undefined,
            discoverable: body.discoverable ?? undefined,
            remove: body.remove ?? [],
          },
          { server: a.server, members: {}, bans: {} },
          { caller: callerFromServer(a, caller.userId), channelLimit: deps.config.serverChannelLimit, privileged },
        );
        return { events, also: files.writes };
      },
      { lock: fileLocks(body.icon, body.banner) },
    );
    return currentServer(deps, serverId);
  },
});
