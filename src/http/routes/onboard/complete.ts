// POST /onboard/complete — {username}: creates the user with a free discriminator → the self User.
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { decideOnboard, discriminatorsInUse, normaliseUsername, pickDiscriminator } from '../../../domain/account/commands.ts';
import { defineRoute } from '../../route.ts';
import { loadAccount } from '../auth/accountLoad.ts';
import { presentSelf } from '../users/present.ts';

export default defineRoute({
  method: 'POST',
  path: '/onboard/complete',
  auth: 'session',
  body: z.strictObject({ username: z.string().max(128) }),
  async handler({ deps, caller, meta, body }) {
    const username = normaliseUsername(body.username);
    const accountStream = `account-${caller.userId}`;
    const nameStream = `username-${username.toLowerCase()}`;
    await deps.executor.execute(meta, [accountStream, nameStream], async () => {
      const state = await loadAccount(deps, caller.userId);
      if (state.user) throw new AppError({ type: 'AlreadyOnboarded' });
      // The uniqueness stream is small and read straight from the log: always current.
      const claims = await deps.store.readStream(nameStream);
      const used = discriminatorsInUse(claims);
      const discriminator = pickDiscriminator(used, Math.random);
      return {
        result: undefined,
        writes: [
          {
            stream: nameStream,
            scope: caller.userId,
            expected: claims.length - 1 < 0 ? 'no_stream' : claims.length - 1,
            events: [{ type: 'UsernameClaimed', data: { userId: caller.userId, username, discriminator } }],
          },
          { stream: accountStream, scope: caller.userId, expected: state.revision, events: decideOnboard(state, username, discriminator) },
        ],
      };
    });
    return presentSelf(await loadAccount(deps, caller.userId));
  },
});
