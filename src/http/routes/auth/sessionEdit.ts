// PATCH /auth/session/:session_id — renames a session: {_id, name}.
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { defineRoute } from '../../route.ts';
import { loadAccount } from './accountLoad.ts';
import { own } from '../../../own.ts';

export default defineRoute({
  method: 'PATCH',
  path: '/auth/session/:session_id',
  auth: 'session',
  body: z.strictObject({ friendly_name: z.string().min(1).max(72) }),
  async handler({ deps, caller, meta, params, body }) {
    const stream = `account-${caller.userId}`;
    const sessionId = params.session_id!;
    await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      if (!own(state.sessions, sessionId)) throw new AppError({ type: 'NotFound' });
      return {
        writes: [{ stream, scope: caller.userId, expected: state.revision, events: [{ type: 'SessionRenamed', data: { sessionId, name: body.friendly_name } }] }],
        result: undefined,
      };
    });
    return { _id: sessionId, name: body.friendly_name };
  },
});
