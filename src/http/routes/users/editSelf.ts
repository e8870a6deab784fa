// PATCH /users/:user_id (only @me or the caller's own id) — edits display name, avatar, status and profile → User.
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import type { EventDataOf } from '../../../domain/events.ts';
import { Presence } from '../../../domain/shared.ts';
import { FileClaims, fileLocks } from '../../../files.ts';
import { codepoints, nameText } from '../../../text.ts';
import { defineRoute } from '../../route.ts';
import { loadAccount } from '../auth/accountLoad.ts';
import { presentSelf } from './present.ts';

const FileId = z.string().min(1).max(128);

const Body = z.strictObject({
  display_name: nameText(2, 32).regex(/^[^\u200B\n\r]+$/, 'display name may not contain line breaks or zero-width spaces').nullish(),
  /** An `avatars` upload id (used once). */
  avatar: FileId.nullish(),
  status: z.strictObject({ text: codepoints(0, 128).nullish(), presence: Presence.nullish() }).nullish(),
  /** `background` is a `backgrounds` upload id (used once). */
  profile: z.strictObject({ content: codepoints(0, 2000).nullish(), background: FileId.nullish() }).nullish(),
  remove: z.array(z.enum(['Avatar', 'StatusText', 'StatusPresence', 'ProfileContent', 'ProfileBackground', 'DisplayName'])).max(16).nullish(),
});

export default defineRoute({
  method: 'PATCH',
  path: '/users/:user_id',
  auth: 'user',
  body: Body,
  async handler({ deps, caller, meta, params, body }) {
    if (params.user_id !== '@me' && params.user_id !== caller.userId) throw new AppError({ type: 'NotPrivileged' });
    const userId = caller.userId;
    const stream = `account-${userId}`;
    await deps.executor.execute(meta, [stream, ...fileLocks(body.avatar, body.profile?.background)], async () => {
      const state = await loadAccount(deps, userId);
      const data: EventDataOf<'UserEdited'> = { remove: body.remove ?? [] };
      const files = new FileClaims(deps, userId);
      if (body.display_name != null) data.display_name = body.display_name;
      const avatar = await files.use(body.avatar, 'avatars', { type: 'UserAvatar', id: userId });
      if (avatar) data.avatar = avatar;
      if (body.status) {
        const s: { text?: string; presence?: z.infer<typeof Presence> } = {};
        if (body.status.text != null) s.text = body.status.text;
        if (body.status.presence != null) s.presence = body.status.presence;
        data.status = s;
      }
      const profile: NonNullable<EventDataOf<'UserEdited'>['profile']> = {};
      if (body.profile?.content != null) profile.content = body.profile.content;
      const background = await files.use(body.profile?.background, 'backgrounds', { type: 'UserProfileBackground', id: userId });
      if (background) profile.background = background;
      if (Object.keys(profile).length > 0) data.profile = profile;
      const changed =
        data.remove.length > 0 || data.display_name !== undefined || data.avatar !== undefined || data.status !== undefined || data.profile !== undefined;
      return {
        writes: changed ? [{ stream, scope: userId, expected: state.revision, events: [{ type: 'UserEdited', data }] }, ...files.writes] : [],
        result: undefined,
      };
    });
    return presentSelf(await loadAccount(deps, userId));
  },
});
