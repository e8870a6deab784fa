/**
 * Channel webhooks: `webhook:<id>` (WebhookState) and `channel:<id>:webhooks` (the set of a channel's webhook
 * ids). Deleting a channel, a group or a server deletes its webhooks (their keys go; no event: the channel's
 * own deletion tells the clients). Runs before `servers` so that a ServerDeleted still finds its channels.
 *
 * Client events (Stoat's `WebhookCreate` / `WebhookUpdate` / `WebhookDelete`, never with the token): a server
 * channel's go by the `channel` route and the gateway passes them only to sockets holding ManageWebhooks
 * there (`src/gateway/hub.ts`); a group's go to the recipients whose group permissions hold ManageWebhooks.
 */
import { privateChannelPermissions } from '../src/access.ts';
import type { PrivateChannelState } from '../src/domain/private/state.ts';
import { publicWebhook, type WebhookState } from '../src/domain/webhook/state.ts';
import { Permission } from '../src/permissions/bits.ts';
import { has } from '../src/permissions/calculate.ts';
import { recipientsOf } from '../src/domain/private/state.ts';
import type { ServerState } from '../src/domain/server/state.ts';
import { rm } from '../src/readmodel/keys.ts';
import type { ClientEventRoute, Projection, ProjectionTx } from './types.ts';

/** Who hears of a webhook change: ManageWebhooks holders of the channel. */
async function routeOf(tx: ProjectionTx, w: Pick<WebhookState, 'channel_id' | 'server'>): Promise<ClientEventRoute | null> {
  if (w.server !== null) return { kind: 'channel', serverId: w.server, channelId: w.channel_id };
  const group = await tx.getJson<PrivateChannelState>(rm.privateChannel(w.channel_id));
  if (!group) return null;
  const userIds = recipientsOf(group).filter((u) => has(privateChannelPermissions(group, u, null), Permission.ManageWebhooks));
  return userIds.length > 0 ? { kind: 'users', userIds, channelId: w.channel_id } : null;
}

/** Drops every webhook of a channel. */
async function dropChannel(tx: ProjectionTx, channelId: string): Promise<void> {
  for (const id of await tx.smembers(rm.channelWebhooks(channelId))) tx.del(rm.webhook(id));
  tx.del(rm.channelWebhooks(channelId));
}

export const webhooksProjection: Projection = {
  name: 'webhooks',
  handles: ['WebhookCreated', 'WebhookEdited', 'WebhookDeleted', 'ChannelDeleted', 'GroupDeleted', 'ServerDeleted'],
  async apply(e, tx) {
    switch (e.type) {
      case 'ChannelDeleted':
        await dropChannel(tx, e.data.channelId);
        return;
      case 'GroupDeleted':
        await dropChannel(tx, e.data.channelId);
        return;
      case 'ServerDeleted': {
        const server = await tx.getJson<ServerState>(rm.server(e.metadata.scope));
        for (const c of new Set([...e.data.channels, ...(server?.channels ?? [])])) await dropChannel(tx, c);
        return;
      }
      case 'WebhookCreated': {
        const { token, tokenHash, permissions, avatar, ...rest } = e.data;
        const server = e.metadata.scope === e.data.channel_id ? null : e.metadata.scope;
        const w: WebhookState = { ...rest, ...(avatar ? { avatar } : {}), permissions, token, tokenHash, server, revision: e.revision };
        tx.setJson(rm.webhook(w.id), w);
        tx.sadd(rm.channelWebhooks(w.channel_id), w.id);
        const route = await routeOf(tx, w);
        if (route) tx.emit(route, { type: 'WebhookCreate', ...publicWebhook(w) });
        return;
      }
      case 'WebhookEdited': {
        const id = e.stream.slice('webhook-'.length);
        const before = await tx.getJson<WebhookState>(rm.webhook(id));
        if (!before) return;
        const w: WebhookState = { ...before, revision: e.revision };
        if (e.data.remove.includes('Avatar')) delete w.avatar;
        if (e.data.name !== undefined) w.name = e.data.name;
        if (e.data.avatar !== undefined) w.avatar = e.data.avatar;
        if (e.data.permissions !== undefined) w.permissions = e.data.permissions;
        tx.setJson(rm.webhook(id), w);
        const data: Record<string, unknown> = {};
        if (e.data.name !== undefined) data.name = e.data.name;
        if (e.data.avatar !== undefined) data.avatar = e.data.avatar;
        if (e.data.permissions !== undefined) data.permissions = Number(BigInt(e.data.permissions));
        const route = await routeOf(tx, w);
        if (route) tx.emit(route, { type: 'WebhookUpdate', id, data, remove: e.data.remove });
        return;
      }
      case 'WebhookDeleted': {
        const id = e.stream.slice('webhook-'.length);
        const before = await tx.getJson<WebhookState>(rm.webhook(id));
        if (!before) return;
        tx.del(rm.webhook(id));
        tx.srem(rm.channelWebhooks(before.channel_id), id);
        const route = await routeOf(tx, before);
        if (route) tx.emit(route, { type: 'WebhookDelete', id });
        return;
      }
      default:
        return;
    }
  },
};
