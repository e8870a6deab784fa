/** Revolt-shaped answers of the server routes, read after the write was projected. */
import { AppError } from '../../../errors.ts';
import { loadServer, type AccessDeps } from '../../../access.ts';
import { presentServer } from '../../../domain/server/state.ts';

export { presentServer };

/** The current server as Revolt's Server JSON (404 when it vanished meanwhile). */
export async function currentServer(deps: AccessDeps, serverId: string): Promise<Record<string, unknown>> {
  const server = await loadServer(deps, serverId);
  if (!server) throw new AppError({ type: 'NotFound' });
  return presentServer(server);
}
