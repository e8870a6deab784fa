// Stoat's per-user server limit (USER_SERVER_LIMIT, default 100): creating or joining one more → 400 TooManyServers {max}.
import { AppError } from '../../../errors.ts';
import { loadMember } from '../../../access.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { AppDeps } from '../../deps.ts';

/**
 * Refuses a server create or join when the user is in USER_SERVER_LIMIT servers already. The user's server
 * set is a hint (written by every partition): only at the limit is each entry checked against its members.
 * Checked per request, not under a stream revision: concurrent joins of one user may pass the limit by the
 * number of requests in flight (the limit bounds what a user holds; it is not a safety invariant).
 */
export async function assertServerSlot(deps: AppDeps, userId: string): Promise<void> {
  const max = deps.config.userServerLimit;
  const ids = await deps.readModels.smembers(rm.userServers(userId));
  if (ids.length < max) return;
  let count = 0;
  for (const id of ids) if (await loadMember(deps, id, userId)) count++;
  if (count >= max) throw new AppError({ type: 'TooManyServers', max });
}
