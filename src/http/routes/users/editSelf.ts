// PATCH /users/:user_id (only @me or the caller's own id) — edits display name, status and profile → User.
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { Presence } from '../../../domain/shared.ts';
import { codepoints } from '../../../text.ts';
import { defineRoute } from '../../route.ts';
import { loadAccount } from '../auth/accountLoad.ts';
import { presentSelf } from './present.ts';

const Body = z.strictObject({
  display_name: codepoints(2, 32).regex(/^[^\u200B\n\r]+$/, 'display name may not contain line breaks or zero-width spaces').nullish(),
  status: z.strictObject({ text: codepoints(0, 128).nullish(), presence: Presence.nullish() }).nullish(),
  profile: z.strictObject({ content: codepoints(0, 2000).nullish() }).nullish(),
  remove: z.array(z.enum(['Avatar', 'StatusText', 'StatusPresence', 'ProfileContent', 'ProfileBackground', 'DisplayName'])).max(16).nullish(),
});

export default defineRoute({
  method: 'PATCH',
  path: '/users/:user_id',
  auth: 'user',
  body: Body,
  async handler({ deps, caller, meta, params, body }) {
    if (params.user_id !== '@me' && params.user_id !== caller.userId) throw new AppError({ type: 'NotPrivileged' });
    const stream = `account-${caller.userId}`;
    await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      const data: {
        display_name?: string;
        status?: { text?: string; presence?: z.infer<typeof Presence> };
        profile?: { content?: string };
        remove: Array<'Avatar' | 'StatusText' | 'StatusPresence' | 'ProfileContent' | 'ProfileBackground' | 'DisplayName'>;
      } = { remove: body.remove ?? [] };
      if (body.display_name != null) data.display_name = body.display_name;
      if (body.status) {
        const s: { text?: string; presence?: z.infer<typeof Presence> } = {};
        if (body.status.text != null) s.text = body.status.text;
        if (body.status.presence != null) s.presence = body.status.presence;
        data.status = s;
      }
      if (body.profile?.content != null) data.profile = { content: body.profile.content };
      const changed = data.remove.length > 0 || data.display_name !== undefined || data.status !== undefined || data.profile !== undefined;
      return {
        writes: changed ? [{ stream, scope: caller.userId, expected: state.revision, events: [{ type: 'UserEdited', data }] }] : [],
        result: undefined,
      };
    });
    return presentSelf(await loadAccount(deps, caller.userId));
  },
});
