// PUT /channels/:channel_id/messages/:message_id/reactions/:emoji — 204 (React; at most 20 distinct emoji per message).
import { emojiKind } from '../../../domain/message/emoji.ts';
import { decideReact } from '../../../domain/message/reactions.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { onMessage } from './command.ts';

export default defineRoute({
  method: 'PUT',
  path: '/channels/:channel_id/messages/:message_id/reactions/:emoji',
  auth: 'user',
  permissions: ['ViewChannel', 'React'],
  async handler(rc) {
    // The router has percent-decoded the emoji already.
    const emoji = rc.params.emoji!;
    // A DM or group has no emoji of its own: any existing custom emoji may be used there, as in Stoat (one
    // read, only for a custom emoji).
    const anyCustom = emojiKind(emoji) === 'custom' && (await rc.deps.readModels.getJson(rm.emoji(emoji))) !== null ? new Set([emoji]) : new Set<string>();
    await onMessage(rc, rc.params.channel_id!, rc.params.message_id!, (a, message) =>
      decideReact(message, emoji, { userId: rc.caller.userId, permissions: a.permissions, emojis: a.kind === 'server' ? new Set(a.server.emojis ?? []) : anyCustom }),
    );
    return NO_CONTENT;
  },
});
