// PUT /auth/account/delete {token} — confirms a deletion with the mailed token: the account is deleted, its
// personal data erased (its key destroyed); the user shows as a deleted user everywhere (204).
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { tokenUserId } from '../../../domain/account/secrets.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { accountOf, tokenMatches } from './accountTools.ts';
import { deletionWrites } from './accountDeletion.ts';
import { botsStream } from '../../../domain/bot/events.ts';

export default defineRoute({
  method: 'PUT',
  path: '/auth/account/delete',
  auth: 'none',
  body: z.strictObject({ token: z.string().max(128) }),
  async handler({ deps, meta, body }) {
    const userId = tokenUserId(body.token);
    if (!userId) throw new AppError({ type: 'InvalidToken' });
    await deps.executor.execute({ ...meta, actor: userId }, [`account-${userId}`, botsStream(userId)], async () => {
      const state = await accountOf(deps, userId);
      if (!state || !tokenMatches(deps, state.deletion, body.token)) throw new AppError({ type: 'InvalidToken' });
      return { writes: await deletionWrites(deps, state, []), result: undefined };
    });
    return NO_CONTENT;
  },
});
