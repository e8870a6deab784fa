// PATCH /users/:user_id (only @me or the caller's own id) — edits display name, avatar, status and profile → User.
import { z } from 'zod';
import type { Write } from '../../../commands.ts';
import { AppError } from '../../../errors.ts';
import type { EventDataOf } from '../../../domain/events.ts';
import { Presence } from '../../../domain/shared.ts';
import { claimFile, fileStream } from '../../../files.ts';
import { codepoints } from '../../../text.ts';
import { defineRoute } from '../../route.ts';
import { loadAccount } from '../auth/accountLoad.ts';
import { presentSelf } from './present.ts';

const FileId = z.string().min(1).max(128);

const Body = z.strictObject({
  display_name: codepoints(2, 32).regex(/^[^\u200B\n\r]+$/, 'display name may not contain line breaks or zero-width spaces').nullish(),
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
    const files = [body.avatar, body.profile?.background].filter((id): id is string => !!id);
    await deps.executor.execute(meta, [stream, ...files.map(fileStream)], async () => {
      const state = await loadAccount(deps, userId);
      const data: EventDataOf<'UserEdited'> = { remove: body.remove ?? [] };
      const fileWrites: Write[] = [];
      if (body.display_name != null) data.display_name = body.display_name;
      if (body.avatar != null) {
        const claim = await claimFile(deps, { fileId: body.avatar, tag: 'avatars', userId, usedFor: { type: 'UserAvatar', id: userId } });
        data.avatar = claim.file;
        fileWrites.push(claim.write);
      }
      if (body.status) {
        const s: { text?: string; presence?: z.infer<typeof Presence> } = {};
        if (body.status.text != null) s.text = body.status.text;
        if (body.status.presence != null) s.presence = body.status.presence;
        data.status = s;
      }
      const profile: NonNullable<EventDataOf<'UserEdited'>['profile']> = {};
      if (body.profile?.content != null) profile.content = body.profile.content;
      if (body.profile?.background != null) {
        const claim = await claimFile(deps, {
          fileId: body.profile.background,
          tag: 'backgrounds',
          userId,
          usedFor: { type: 'UserProfileBackground', id: userId },
        });
        profile.background = claim.file;
        fileWrites.push(claim.write);
      }
      if (Object.keys(profile).length > 0) data.profile = profile;
      const changed =
        data.remove.length > 0 || data.display_name !== undefined || data.avatar !== undefined || data.status !== undefined || data.profile !== undefined;
      return {
        writes: changed ? [{ stream, scope: userId, expected: state.revision, events: [{ type: 'UserEdited', data }] }, ...fileWrites] : [],
        result: undefined,
      };
    });
    return presentSelf(await loadAccount(deps, userId));
  },
});
