/** Revolt-shaped answers of the channel routes, read after the write was projected. */
import { AppError } from '../../../errors.ts';
import { loadChannel, type AccessDeps } from '../../../access.ts';
import { presentChannel } from '../../../domain/channel/state.ts';
import type { ServerChannelObject } from '../../../domain/models.ts';
import { withLastMessage } from '../../../readmodel/lastMessages.ts';

/** The current channel as Revolt's Channel JSON (404 when it vanished meanwhile). */
export async function currentChannel(deps: AccessDeps, channelId: string): Promise<ServerChannelObject> {
  const channel = await loadChannel(deps, channelId);
  if (!channel) throw new AppError({ type: 'NotFound' });
  return withLastMessage(deps.readModels, presentChannel(channel));
}
