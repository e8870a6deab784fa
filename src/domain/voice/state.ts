/** A server's voice presence (read model `voice:<serverId>`), and the pure decisions over it. */
import type { DomainEvent } from '../events.ts';

/** Stoat's `UserVoiceState`. */
export interface UserVoiceState {
  id: string;
  joined_at: number;
  is_receiving: boolean;
  is_publishing: boolean;
  screensharing: boolean;
  camera: boolean;
}

/** Who is where in one server's voice channels, with the `voice-<serverId>` revision. */
export interface ServerVoiceState {
  /** User id → the channel they are in and their state. */
  participants: Record<string, { channel: string; state: UserVoiceState }>;
  /** A DM's or group's call in progress → the id of its `call_started` system message. */
  calls?: Record<string, string>;
  revision: number;
}

/** What a LiveKit webhook reported, reduced to what presence needs. */
export type VoiceReport =
  | {
      kind: 'joined';
      channel: string;
      user: string;
      at: number;
      /** A DM's or group's call: who its start rings, and the id its `call_started` message gets. */
      start?: { ring: string[]; message: string };
    }
  | { kind: 'left'; channel: string; user: string }
  | { kind: 'track'; channel: string; user: string; source: 'microphone' | 'camera' | 'screen'; on: boolean };

/** The events a report leads to; nothing when it changes nothing (a repeated or out-of-date webhook). */
export function decideVoice(state: ServerVoiceState | null, r: VoiceReport): DomainEvent[] {
  const current = state?.participants[r.user];
  switch (r.kind) {
    case 'joined':
      if (current?.channel === r.channel) return [];
      // The first one in a DM's or group's call starts it: its message is posted, the others are rung.
      const start = r.start && !Object.values(state?.participants ?? {}).some((p) => p.channel === r.channel) ? r.start : undefined;
      return [
        {
          type: 'VoiceParticipantJoined',
          data: {
            channel: r.channel,
            user: r.user,
            joined_at: r.at,
            ...(current ? { moved_from: current.channel } : {}),
            ...(start && start.ring.length > 0 ? { ring: start.ring } : {}),
            ...(start ? { call_message: start.message } : {}),
          },
        },
      ];
    case 'left':
      // A leave of a channel the user already moved out of is the old room's late goodbye.
      if (current?.channel !== r.channel) return [];
      return [{ type: 'VoiceParticipantLeft', data: { channel: r.channel, user: r.user } }];
    case 'track': {
      if (current?.channel !== r.channel) return [];
      const field = r.source === 'microphone' ? 'is_publishing' : r.source === 'camera' ? 'camera' : 'screensharing';
      if (current.state[field] === r.on) return [];
      return [{ type: 'VoiceStateUpdated', data: { channel: r.channel, user: r.user, data: { [field]: r.on } } }];
    }
  }
}

/** The `call_started` message of the call a leave ends (the last participant of a DM's or group's call), if any. */
export function endedCall(state: ServerVoiceState | null, r: VoiceReport, events: readonly DomainEvent[]): string | undefined {
  if (r.kind !== 'left' || !events.some((e) => e.type === 'VoiceParticipantLeft')) return undefined;
  const message = state?.calls?.[r.channel];
  if (message === undefined) return undefined;
  const others = Object.entries(state?.participants ?? {}).some(([u, p]) => u !== r.user && p.channel === r.channel);
  return others ? undefined : message;
}
