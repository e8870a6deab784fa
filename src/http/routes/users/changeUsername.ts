// PATCH /users/@me/username — {username, password}: a new username (Stoat's rules; wrong password → 401 InvalidCredentials, counted with login's lockout) → User.
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { decideUsernameChange, discriminatorsInUse, normaliseUsername } from '../../../domain/account/commands.ts';
import type { Write } from '../../../commands.ts';
import { defineRoute } from '../../route.ts';
import { confirmPassword, loadAccount } from '../auth/accountLoad.ts';
import { presentSelf } from './present.ts';

export default defineRoute({
  method: 'PATCH',
  path: '/users/@me/username',
  auth: 'user',
  noBots: true,
  // Lengths as Stoat: username 2–32 (checked with its form below), password 8–1024.
  body: z.strictObject({ username: z.string().max(128), password: z.string().min(8).max(1024) }),
  async handler({ deps, caller, meta, body }) {
    // Stoat checks the form (400 FailedValidation), then the password (401), then the blocked names (400 InvalidUsername).
    let username: string;
    let blocked = false;
    try {
      username = normaliseUsername(body.username);
    } catch (err) {
      if (!(err instanceof AppError) || err.body.type !== 'InvalidUsername') throw err;
      blocked = true;
      username = body.username.normalize('NFKC');
    }
    const userId = caller.userId;
    // Under login's lockout: a wrong password is counted; while locked, even the right one is refused (401
    // InvalidCredentials: Stoat's errors for this route have no LockedOut).
    const before = await confirmPassword(deps, meta, userId, body.password, 'InvalidCredentials');
    if (blocked) throw new AppError({ type: 'InvalidUsername' });
    const accountStream = `account-${userId}`;
    const newStream = `username-${username.toLowerCase()}`;
    const oldStream = before.user ? `username-${before.user.username.toLowerCase()}` : newStream;
    await deps.executor.execute(meta, [...new Set([accountStream, newStream, oldStream])], async () => {
      const state = await loadAccount(deps, userId);
      if (!state.user) throw new AppError({ type: 'InvalidSession' });
      const oldName = `username-${state.user.username.toLowerCase()}`;
      // The uniqueness streams are small and read straight from the log: always current.
      const claims = await deps.store.readStream(newStream);
      const change = decideUsernameChange(state.user, username, discriminatorsInUse(claims), Math.random);
      if (change.unchanged) return { writes: [], result: undefined };
      const writes: Write[] = [];
      if (!change.sameName) {
        const released = await deps.store.readStream(oldName);
        writes.push(
          {
            stream: newStream,
            scope: userId,
            expected: claims.length === 0 ? 'no_stream' : claims.length - 1,
            events: [{ type: 'UsernameClaimed', data: { userId, username, discriminator: change.discriminator } }],
          },
          {
            stream: oldName,
            scope: userId,
            expected: released.length === 0 ? 'no_stream' : released.length - 1,
            events: [{ type: 'UsernameReleased', data: { userId, discriminator: state.user.discriminator } }],
          },
        );
      }
      writes.push({ stream: accountStream, scope: userId, expected: state.revision, events: [{ type: 'UsernameChanged', data: { username, discriminator: change.discriminator } }] });
      return { writes, result: undefined };
    });
    return presentSelf(await loadAccount(deps, userId));
  },
});
