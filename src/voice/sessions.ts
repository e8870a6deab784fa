/**
 * Where a user is in voice now, across every server and every DM or group call (the `voice` projection's
 * presence, kept per server and per private call), and Stoat's `force_disconnect`: removing them from those
 * rooms through LiveKit's RoomService.
 */
import type { AccessDeps } from '../access.ts';
import { recipientsOf, type PrivateChannelState } from '../domain/private/state.ts';
import type { ServerVoiceState } from '../domain/voice/state.ts';
import { rm } from '../readmodel/keys.ts';
import { isNotFound, roomService } from './rooms.ts';

/** The voice channels (rooms) the user is in now: one per server at most, and any DM or group call. */
export async function voiceChannelsOf(deps: AccessDeps, userId: string): Promise<string[]> {
  const [serverIds, privateIds] = await Promise.all([deps.readModels.smembers(rm.userServers(userId)), deps.readModels.smembers(rm.userPrivateChannels(userId))]);
  const privates = await deps.readModels.mgetJson<PrivateChannelState>(privateIds.map((id) => rm.privateChannel(id)));
  const calls = privates.filter((c): c is PrivateChannelState => c !== null && c.channel_type !== 'SavedMessages' && recipientsOf(c).includes(userId)).map((c) => c._id);
  const scopes = [...serverIds, ...calls];
  const states = await deps.readModels.mgetJson<ServerVoiceState>(scopes.map((id) => rm.serverVoice(id)));
  const out: string[] = [];
  for (const st of states) {
    const p = st && Object.hasOwn(st.participants, userId) ? st.participants[userId] : undefined;
    if (p) out.push(p.channel);
  }
  return out;
}

/**
 * Removes the user from each of `rooms` (LiveKit RemoveParticipant). Like Stoat, a room LiveKit no longer
 * has them in is no failure; presence follows from LiveKit's `participant_left` webhooks.
 */
export async function disconnectEverywhere(voice: { url: string; apiKey: string; apiSecret: string }, userId: string, rooms: readonly string[]): Promise<void> {
  const service = await roomService(voice);
  await Promise.all(
    rooms.map(async (room) => {
      try {
        await service.removeParticipant(room, userId);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }),
  );
}
