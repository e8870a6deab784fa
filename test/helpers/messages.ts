/** Helpers for message and emoji tests: uploads through the real media server. */
import type { Service } from '../../src/service.ts';
import type { TestUser } from './http.ts';
import { png, upload } from './media.ts';

let made = 0;

/** Uploads a small PNG (a different one each call) with `tag` as `user`; returns its id. */
export async function uploadImage(s: Pick<Service, 'mediaUrl'>, user: TestUser, tag: 'attachments' | 'avatars' | 'emojis' | 'icons', o: { bytes?: Uint8Array; filename?: string; contentType?: string } = {}): Promise<string> {
  const n = ++made;
  const bytes = o.bytes ?? (await png(8 + (n % 8), 8, { r: n % 256, g: (n >> 8) % 256, b: 77 }));
  const r = await upload(s, user.token, tag, bytes, { filename: o.filename ?? `image${n}.png`, contentType: o.contentType ?? 'image/png' });
  if (r.status !== 200) throw new Error(`upload ${tag}: ${r.status} ${r.text}`);
  return r.body.id as string;
}

/** Creates a custom emoji on a server from a fresh upload by `user`; returns the emoji. */
export async function createEmoji(s: Pick<Service, 'mediaUrl'>, user: TestUser, serverId: string, name = 'emoji'): Promise<{ _id: string; [k: string]: unknown }> {
  const id = await uploadImage(s, user, 'emojis');
  const r = await user.api.put(`/custom/emoji/${id}`, { name, parent: { type: 'Server', id: serverId } });
  if (r.status !== 200) throw new Error(`emoji create: ${r.status} ${r.text}`);
  return r.body;
}
