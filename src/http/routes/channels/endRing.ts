// PUT /channels/:channel_id/end_ring/:user_id — Stoat's stop_ring: a participant of a DM's or group's call stops
// ringing one recipient, whose ringing push is replaced by one saying the call stopped ringing. 204.
import { channelAccess } from '../../../access.ts';
import { recipientsOf } from '../../../domain/private/state.ts';
import type { ServerVoiceState } from '../../../domain/voice/state.ts';
import { ringStream } from '../../../domain/voice/events.ts';
import { AppError } from '../../../errors.ts';
import { rm } from '../../../readmodel/keys.ts';
import { NO_CONTENT, defineRoute } from '../../route.ts';

export default defineRoute({
  method: 'PUT',
  path: '/channels/:channel_id/end_ring/:user_id',
  auth: 'user',
  async handler({ deps, caller, params, meta }) {
    // Stoat's order: voice on, then the channel (a server channel: NoEffect), the caller in the call, the target a recipient.
    if (!deps.config.voice.enabled) throw new AppError({ type: 'LiveKitUnavailable' });
    const a = await channelAccess(deps, params.channel_id!, caller.userId);
    if (a.kind !== 'private' || (a.channel.channel_type !== 'DirectMessage' && a.channel.channel_type !== 'Group')) throw new AppError({ type: 'NoEffect' });
    const channelId = a.channel._id;
    const call = await deps.readModels.getJson<ServerVoiceState>(rm.serverVoice(channelId));
    if (call?.participants[caller.userId]?.channel !== channelId) throw new AppError({ type: 'NotConnected' });
    const target = params.user_id!;
    if (!recipientsOf(a.channel).includes(target)) throw new AppError({ type: 'NotFound' });
    await deps.executor.execute(meta, [ringStream(channelId)], async () => ({
      writes: [{ stream: ringStream(channelId), scope: channelId, expected: 'any', events: [{ type: 'CallRingStopped', data: { channel: channelId, by: caller.userId, users: [target] } }] }],
      result: undefined,
    }));
    return NO_CONTENT;
  },
});
