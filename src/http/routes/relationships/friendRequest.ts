// POST /users/friend {username: "name#discriminator"} — sends a friend request by username → User.
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { decideAddFriend } from '../../../domain/relationship/decide.ts';
import { defineRoute } from '../../route.ts';
import { changeRelationship, loadTargetUser, presentTarget } from './command.ts';

const Body = z.strictObject({ username: z.string().min(1).max(64) });

export default defineRoute({
  method: 'POST',
  path: '/users/friend',
  auth: 'user',
  noBots: true,
  body: Body,
  async handler(rc) {
    // Stoat: without a `#` the lookup is not attempted (400 InvalidProperty).
    const at = rc.body.username.lastIndexOf('#');
    if (at <= 0) throw new AppError({ type: 'InvalidProperty' });
    const name = rc.body.username.slice(0, at);
    const discriminator = rc.body.username.slice(at + 1);
    // The uniqueness stream `username-<lowercase>` records who claimed each discriminator; the profile must
    // still carry that name (a renamed user's old claim does not count).
    const claims = await rc.deps.store.readStream(`username-${name.toLowerCase()}`);
    const claim = claims.map((c) => c.data as { userId: string; discriminator: string }).find((c) => c.discriminator === discriminator);
    if (!claim) throw new AppError({ type: 'NotFound' });
    const target = await loadTargetUser(rc, claim.userId);
    if (target.username.toLowerCase() !== name.toLowerCase() || target.discriminator !== discriminator) throw new AppError({ type: 'NotFound' });
    // Stoat: a bot is nobody's friend.
    if (target.bot) throw new AppError({ type: 'IsBot' });
    await changeRelationship(rc, target._id, (p) => decideAddFriend(p, { maxOutgoing: rc.deps.config.friendRequestLimit }));
    return presentTarget(rc, target);
  },
});
