/**
 * Which uploads are still in use (issue 17 item 3): a file is served only while the object that consumed it
 * still uses it, as in Stoat, where deleting a message or replacing an avatar marks its file deleted and the
 * file server answers 404 from then on.
 *
 * The events of the object that uses a file carry the File object (a message's `attachments` and embed
 * `media`, a user's avatar and profile background, a server's icon and banner, a role's icon, a member's
 * avatar, a channel's or group's icon, an emoji, whose id is its file's id). So this projection follows the
 * owners' events, in their own partition, and marks a file detached (`rm.fileDetached`) when its owner lets
 * go of it:
 * - a message deleted (also in bulk) or edited to other embeds; a channel or group deleted (all its
 *   messages' files, kept in `rm.channelFiles`, and its icon);
 * - a user, server, role, member, channel or group field replaced by another file or removed; a user
 *   account deleted; a member leaving; a role deleted; an emoji deleted;
 * - a server deleted: its icon and banner, its roles' icons, its members' avatars, its emoji, its channels'
 *   icons and messages' files;
 * - a webhook's avatar replaced or removed, the webhook deleted, or its channel (group, server) deleted.
 *
 * It runs before the projections that keep the owners' state (accounts, servers, channels, emojis, messages,
 * private channels: see `projections/index.ts`) and reads that state as it was before the event, like the
 * audit projection. A detachment is final (a file is used once) and carries only the event's own time and
 * type, so a rebuild writes the same keys. The marker and the purge's queue (`rm.detachedFiles`, one member
 * per file) are the only keys written outside the event's scope (the file's uploader owns `file:<id>`): the
 * marker is set once, never read by a projection, never changed.
 */
import type { StoredEvent } from '../src/domain/events.ts';
import type { UserProfile } from '../src/domain/account/state.ts';
import type { ChannelState } from '../src/domain/channel/state.ts';
import type { MessageState } from '../src/domain/message/state.ts';
import type { EmojiObject, MemberObject } from '../src/domain/models.ts';
import type { PrivateChannelState } from '../src/domain/private/state.ts';
import type { ServerState } from '../src/domain/server/state.ts';
import type { WebhookState } from '../src/domain/webhook/state.ts';
import type { FileObject } from '../src/domain/shared.ts';
import { rm } from '../src/readmodel/keys.ts';
import type { Projection, ProjectionTx } from './types.ts';

/** The file ids a message uses: attachments and embed media. */
function messageFiles(m: Pick<MessageState, 'attachments' | 'embeds'> | null | undefined): string[] {
  if (!m) return [];
  const ids = (m.attachments ?? []).map((f) => f._id);
  for (const embed of m.embeds ?? []) if (embed.type === 'Text' && embed.media) ids.push(embed.media._id);
  return ids;
}

function detach(tx: ProjectionTx, e: StoredEvent, ...fileIds: Array<string | undefined>): void {
  for (const id of fileIds) {
    if (id === undefined) continue;
    tx.setJson(rm.fileDetached(id), { at: e.metadata.at, by: e.type });
    // Queued for the purge of its bytes (src/media/sweep.ts) once DETACHED_FILE_RETENTION_MS has passed; the
    // files of a message retention erased are past it already (score 0: the next purge takes them; the sweep
    // that erased the message purges them at once, this is the net for a sweep killed in between).
    tx.zadd(rm.detachedFiles(), e.type === 'MessageErased' ? 0 : Date.parse(e.metadata.at), id);
  }
}

/** Detaches `before` when `after` is not the same file (a field replaced by another file, or removed). */
function replaced(tx: ProjectionTx, e: StoredEvent, before: FileObject | undefined, after: FileObject | undefined, removed: boolean): void {
  if (!before) return;
  if (after !== undefined ? after._id !== before._id : removed) detach(tx, e, before._id);
}

/** Detaches the avatars of a channel's webhooks (the channel, group or server is deleted: its webhooks go). */
async function dropWebhookAvatars(tx: ProjectionTx, e: StoredEvent, channelId: string): Promise<void> {
  for (const id of await tx.smembers(rm.channelWebhooks(channelId))) detach(tx, e, (await tx.getJson<WebhookState>(rm.webhook(id)))?.avatar?._id);
}

/** Detaches every file of a channel's messages and its webhooks' avatars, and drops the index. */
async function dropChannelFiles(tx: ProjectionTx, e: StoredEvent, channelId: string): Promise<void> {
  await dropWebhookAvatars(tx, e, channelId);
  const files = await tx.hgetallJson<string>(rm.channelFiles(channelId));
  detach(tx, e, ...files.keys());
  tx.del(rm.channelFiles(channelId));
}

export const fileUsesProjection: Projection = {
  name: 'fileUses',
  handles: [
    'MessageSent',
    'MessageEdited',
    'MessageDeleted',
    'MessageErased',
    'UserEdited',
    'AccountDeleted',
    'ServerEdited',
    'ServerDeleted',
    'RoleEdited',
    'RoleDeleted',
    'MemberEdited',
    'MemberLeft',
    'ChannelEdited',
    'ChannelDeleted',
    'EmojiDeleted',
    'GroupEdited',
    'GroupDeleted',
    'WebhookEdited',
    'WebhookDeleted',
  ],
  async apply(e, tx) {
    switch (e.type) {
      case 'MessageSent': {
        const m = e.data.message;
        for (const id of messageFiles(m)) tx.hsetJson(rm.channelFiles(m.channel), id, m._id);
        return;
      }
      case 'MessageEdited': {
        if (e.data.data.embeds === undefined) return;
        const messageId = e.stream.slice('message-'.length);
        const before = await tx.rgetJson<MessageState>(rm.channelHistory(e.data.channel), messageId);
        if (!before) return;
        const kept = new Set(messageFiles({ attachments: before.attachments, embeds: e.data.data.embeds }));
        const gone = messageFiles(before).filter((id) => !kept.has(id));
        for (const id of kept) tx.hsetJson(rm.channelFiles(e.data.channel), id, messageId);
        detach(tx, e, ...gone);
        if (gone.length) tx.hdel(rm.channelFiles(e.data.channel), ...gone);
        return;
      }
      case 'MessageDeleted': {
        const messageId = e.stream.slice('message-'.length);
        const before = await tx.rgetJson<MessageState>(rm.channelHistory(e.data.channel), messageId);
        const ids = messageFiles(before);
        detach(tx, e, ...ids);
        if (ids.length) tx.hdel(rm.channelFiles(e.data.channel), ...ids);
        return;
      }
      case 'MessageErased': {
        // The files are in the event (a rebuild drops the erased send, so there is no message to read them from).
        detach(tx, e, ...e.data.files);
        if (e.data.files.length) tx.hdel(rm.channelFiles(e.data.channel), ...e.data.files);
        return;
      }
      case 'UserEdited':
      case 'AccountDeleted': {
        if (!e.stream.startsWith('account-')) return;
        const userId = e.stream.slice('account-'.length);
        const before = await tx.getJson<UserProfile>(rm.user(userId));
        if (!before) return;
        if (e.type === 'AccountDeleted') {
          detach(tx, e, before.avatar?._id, before.profile?.background?._id);
          return;
        }
        replaced(tx, e, before.avatar, e.data.avatar, e.data.remove.includes('Avatar'));
        replaced(tx, e, before.profile?.background, e.data.profile?.background, e.data.remove.includes('ProfileBackground'));
        return;
      }
      case 'ServerEdited': {
        const before = await tx.getJson<ServerState>(rm.server(e.stream.slice('server-'.length)));
        if (!before) return;
        replaced(tx, e, before.icon, e.data.data.icon, e.data.remove.includes('Icon'));
        replaced(tx, e, before.banner, e.data.data.banner, e.data.remove.includes('Banner'));
        return;
      }
      case 'ServerDeleted': {
        const serverId = e.stream.slice('server-'.length);
        const before = await tx.getJson<ServerState>(rm.server(serverId));
        if (!before) return;
        detach(tx, e, before.icon?._id, before.banner?._id, ...Object.values(before.roles).map((r) => r.icon?._id));
        const members = await tx.hgetallJson<MemberObject>(rm.serverMembers(serverId));
        detach(tx, e, ...[...members.values()].map((m) => m.avatar?._id));
        const emojis = await tx.hgetallJson<EmojiObject>(rm.serverEmojis(serverId));
        detach(tx, e, ...emojis.keys());
        for (const channelId of new Set([...before.channels, ...e.data.channels])) {
          const channel = await tx.getJson<ChannelState>(rm.channel(channelId));
          detach(tx, e, channel?.icon?._id);
          await dropChannelFiles(tx, e, channelId);
        }
        return;
      }
      case 'RoleEdited':
      case 'RoleDeleted': {
        const before = await tx.getJson<ServerState>(rm.server(e.stream.slice('server-'.length)));
        const role = before && Object.hasOwn(before.roles, e.data.roleId) ? before.roles[e.data.roleId] : undefined;
        if (!role) return;
        if (e.type === 'RoleDeleted') detach(tx, e, role.icon?._id);
        else replaced(tx, e, role.icon, e.data.data.icon, e.data.remove.includes('Icon'));
        return;
      }
      case 'MemberEdited':
      case 'MemberLeft': {
        const member = await tx.hgetJson<MemberObject>(rm.serverMembers(e.stream.slice('server-'.length)), e.data.userId);
        if (!member) return;
        if (e.type === 'MemberLeft') detach(tx, e, member.avatar?._id);
        else replaced(tx, e, member.avatar, e.data.data.avatar, e.data.remove.includes('Avatar'));
        return;
      }
      case 'ChannelEdited': {
        const before = await tx.getJson<ChannelState>(rm.channel(e.data.channelId));
        if (before) replaced(tx, e, before.icon, e.data.data.icon, e.data.remove.includes('Icon'));
        return;
      }
      case 'ChannelDeleted': {
        const before = await tx.getJson<ChannelState>(rm.channel(e.data.channelId));
        detach(tx, e, before?.icon?._id);
        await dropChannelFiles(tx, e, e.data.channelId);
        return;
      }
      case 'EmojiDeleted':
        detach(tx, e, e.data.emojiId);
        return;
      case 'GroupEdited': {
        const before = await tx.getJson<PrivateChannelState>(rm.privateChannel(e.data.channelId));
        if (before && before.channel_type === 'Group') replaced(tx, e, before.icon, e.data.data.icon, e.data.remove.includes('Icon'));
        return;
      }
      case 'GroupDeleted': {
        const before = await tx.getJson<PrivateChannelState>(rm.privateChannel(e.data.channelId));
        if (before && before.channel_type === 'Group') detach(tx, e, before.icon?._id);
        await dropChannelFiles(tx, e, e.data.channelId);
        return;
      }
      case 'WebhookEdited':
      case 'WebhookDeleted': {
        const before = await tx.getJson<WebhookState>(rm.webhook(e.stream.slice('webhook-'.length)));
        if (!before) return;
        if (e.type === 'WebhookDeleted') detach(tx, e, before.avatar?._id);
        else replaced(tx, e, before.avatar, e.data.avatar, e.data.remove.includes('Avatar'));
        return;
      }
      default:
        return;
    }
  },
};
