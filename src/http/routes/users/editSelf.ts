// PATCH /users/:user_id (@me or the caller's id; instance admins: anyone's badges and flags) — edits display name, avatar, status, profile → User.
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import type { EventDataOf } from '../../../domain/events.ts';
import { Presence } from '../../../domain/shared.ts';
import { FileClaims, fileLocks } from '../../../files.ts';
import { codepoints, nameText } from '../../../text.ts';
import { defineRoute } from '../../route.ts';
import { loadAccount } from '../auth/accountLoad.ts';
import { isUlid } from '../../../ids.ts';
import type { AccountState } from '../../../domain/account/state.ts';
import { rm } from '../../../readmodel/keys.ts';
import { instanceRole } from '../admin/staff.ts';
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
  /** Instance admins only (403 NotPrivileged). */
  badges: z.number().int().min(0).max(0x7fffffff).nullish(),
  /** Instance admins only (403 NotPrivileged). */
  flags: z.number().int().min(0).max(0x7fffffff).nullish(),
});

export default defineRoute({
  method: 'PATCH',
  path: '/users/:user_id',
  auth: 'user',
  body: Body,
  async handler({ deps, caller, meta, params, body }) {
    const self = params.user_id === '@me' || params.user_id === caller.userId;
    const staffFields = body.badges != null || body.flags != null;
    // Stoat's privileged users (here: instance admins) set badges and flags, on anyone; nobody else does.
    if ((staffFields || !self) && (await instanceRole(deps, caller.userId)) !== 'admin') throw new AppError({ type: 'NotPrivileged' });
    const otherFields = body.display_name != null || body.avatar != null || body.status != null || body.profile != null || (body.remove?.length ?? 0) > 0;
    if (!self && otherFields) throw new AppError({ type: 'NotPrivileged' });
    const userId = self ? caller.userId : params.user_id!;
    if (!self && !isUlid(userId)) throw new AppError({ type: 'NotFound' });
    const stream = `account-${userId}`;
    await deps.executor.execute(meta, [stream, ...fileLocks(body.avatar, body.profile?.background)], async () => {
      const state = self ? await loadAccount(deps, userId) : await deps.readModels.getJson<AccountState>(rm.account(userId));
      if (!state?.user || state.deleted) throw new AppError({ type: 'NotFound' });
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
      if (body.badges != null) data.badges = body.badges;
      if (body.flags != null) data.flags = body.flags;
      const changed =
        data.remove.length > 0 || data.display_name !== undefined || data.avatar !== undefined || data.status !== undefined || data.profile !== undefined || staffFields;
      return {
        writes: changed ? [{ stream, scope: userId, expected: state.revision, events: [{ type: 'UserEdited', data }] }, ...files.writes] : [],
        result: undefined,
      };
    });
    if (self) return presentSelf(await loadAccount(deps, userId));
    const after = await deps.readModels.getJson<AccountState>(rm.account(userId));
    if (!after?.user) throw new AppError({ type: 'NotFound' });
    return { ...after.user, relationship: 'None', online: false };
  },
});
