// Stoat's per-user server limit (USER_SERVER_LIMIT, default 100): creating or joining one more → 400 TooManyServers {max}.
import type { Write } from '../../../commands.ts';
import { AppError } from '../../../errors.ts';
import { loadMember } from '../../../access.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { AppDeps } from '../../deps.ts';

/** The stream that orders a user's server creates and joins (`serverslots-<userId>`, scope the user). */
export const serverSlotStream = (userId: string) => `serverslots-${userId}`;

/**
 * Refuses a server create or join when the user is in USER_SERVER_LIMIT servers already (read models). The
 * user's server set is a hint (written by every partition): only at the limit is each entry checked against
 * its members. On its own this is a per-request check; `claimServerSlot` makes it exact under concurrency.
 */
export async function assertServerSlot(deps: AppDeps, userId: string): Promise<void> {
  const max = deps.config.userServerLimit;
  const ids = await deps.readModels.smembers(rm.userServers(userId));
  if (ids.length < max) return;
  let count = 0;
  for (const id of ids) if (await loadMember(deps, id, userId)) count++;
  if (count >= max) throw new AppError({ type: 'TooManyServers', max });
}

/**
 * Decides a server slot for `userId` entering `serverId`, exactly under concurrency (also across API processes):
 * every create and join of the user appends `ServerSlotTaken` to `serverslots-<userId>` at the revision read
 * before counting, in the same atomic append as its own events, so two concurrent ones conflict and the loser
 * decides again with fresh read models (the executor catches them up with the log). Before counting, the read
 * models are waited for up to the user's last slot taken (its server's partition), so the membership it
 * stands for is counted even when it was appended by another process a moment ago; earlier ones were waited
 * for by the decision that followed them. Returns the write, to be appended LAST among the command's writes
 * (its position then follows the membership events it stands for).
 */
export async function claimServerSlot(deps: AppDeps, userId: string, serverId: string): Promise<Write> {
  const stream = serverSlotStream(userId);
  const [last] = await deps.store.readStream(stream, { direction: 'backwards', maxCount: 1 });
  if (last) await deps.readModels.waitFor((last.data as { server: string }).server, last.position);
  await assertServerSlot(deps, userId);
  return { stream, scope: userId, expected: last ? last.revision : 'no_stream', events: [{ type: 'ServerSlotTaken', data: { server: serverId } }] };
}
