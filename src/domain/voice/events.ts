/**
 * Voice presence (stream `voice-<serverId>`, scope = the server, so it projects in order with the server's
 * channels and members; a DM's or group's call: stream `voice-<channelId>`, scope = the channel). Driven by LiveKit's webhooks (`POST /livekit/webhook`): who is in which voice channel
 * of the server, and their microphone, camera and screen-share state. A user is in at most one voice channel
 * per server (Stoat's rule): joining another one is a move.
 */
import { z } from 'zod';

/** The stream of a server's voice presence. */
export const voiceStream = (serverId: string) => `voice-${serverId}`;

/** The stream of the ring stops of a DM's or group's calls (kept apart: they change no presence). */
export const ringStream = (channelId: string) => `ring-${channelId}`;

/** Stoat's `UserVoiceState` without the id (the event names the user). */
export const VoiceFlags = z.object({
  is_receiving: z.boolean(),
  is_publishing: z.boolean(),
  screensharing: z.boolean(),
  camera: z.boolean(),
});

export const voiceEvents = {
  /** A user joined a voice channel (`moved_from`: the channel of this server they were in until now). */
  VoiceParticipantJoined: z.object({
    channel: z.string(),
    user: z.string(),
    joined_at: z.number().int(),
    moved_from: z.string().optional(),
    /** A DM's or group's call started with this join: the recipients rung (pushed "… is calling you"). */
    ring: z.array(z.string()).max(100).optional(),
    /** A DM's or group's call started with this join: its `call_started` system message, posted with it. */
    call_message: z.string().optional(),
  }),
  /** A user left a voice channel. */
  VoiceParticipantLeft: z.object({ channel: z.string(), user: z.string() }),
  /** A participant's state changed (a track published, unpublished, muted or unmuted; receiving switched). */
  VoiceStateUpdated: z.object({ channel: z.string(), user: z.string(), data: VoiceFlags.partial() }),
  /**
   * `by`, in a DM's or group's call, stopped ringing `users` (Stoat's stop_ring, `PUT
   * /channels/:id/end_ring/:user`): their ringing notification is replaced. Stream `ring-<channelId>`.
   */
  CallRingStopped: z.object({ channel: z.string(), by: z.string(), users: z.array(z.string()).min(1).max(100) }),
};
