/**
 * Voice presence: `voice:<serverId>` (ServerVoiceState) from the `voice-<serverId>` events, and Stoat's client
 * events to the sockets that see the channel; a DM's or group's call likewise as `voice:<channelId>` from
 * `voice-<channelId>`, its events to the channel's recipients: VoiceChannelJoin, VoiceChannelLeave, VoiceChannelMove,
 * UserVoiceStateUpdate; and Stoat's VoiceCallUpdate (voice-ingress): when a DM's or group's call starts, to the
 * recipients it rings (`started_at`, `ended: false`), and when its last participant leaves, to every recipient
 * (`started_at: null`, `ended: true`, the initiator being the one who left last). A member's `can_receive` (server deafen) sets `is_receiving`; a deleted channel, server
 * or group drops its participants (the voice worker closes the room; LiveKit's late leaves then find no call).
 */
import type { ServerVoiceState, UserVoiceState } from '../src/domain/voice/state.ts';
import { rm } from '../src/readmodel/keys.ts';
import type { ClientEventRoute, Projection } from './types.ts';
import { recipientsOf, type PrivateChannelState } from '../src/domain/private/state.ts';

export const voiceProjection: Projection = {
  name: 'voice',
  handles: ['VoiceParticipantJoined', 'VoiceParticipantLeft', 'VoiceStateUpdated', 'MemberEdited', 'ChannelDeleted', 'ServerDeleted', 'GroupDeleted'],
  async apply(e, tx) {
    const serverId = e.metadata.scope;
    const key = rm.serverVoice(serverId);
    const isVoiceStream = e.stream.startsWith('voice-');
    const state = (await tx.getJson<ServerVoiceState>(key)) ?? { participants: {}, revision: -1 };
    // A DM's or group's call: its presence is scoped by the channel itself, its events go to its recipients.
    const to = async (channelId: string): Promise<ClientEventRoute> => {
      if (channelId !== serverId) return { kind: 'channel', serverId, channelId };
      const priv = await tx.getJson<PrivateChannelState>(rm.privateChannel(channelId));
      return { kind: 'users', userIds: priv ? recipientsOf(priv) : [], channelId };
    };
    switch (e.type) {
      case 'VoiceParticipantJoined': {
        const voice: UserVoiceState = { id: e.data.user, joined_at: e.data.joined_at, is_receiving: true, is_publishing: false, screensharing: false, camera: false };
        state.participants[e.data.user] = { channel: e.data.channel, state: voice };
        if (e.data.call_message !== undefined) {
          state.calls = { ...state.calls, [e.data.channel]: e.data.call_message };
          if (e.data.ring !== undefined && e.data.ring.length > 0) {
            const started = { type: 'VoiceCallUpdate', initiator_id: e.data.user, channel_id: e.data.channel, started_at: new Date(e.data.joined_at).toISOString(), ended: false };
            tx.emit({ kind: 'users', userIds: e.data.ring, channelId: e.data.channel }, started);
          }
        }
        if (e.data.moved_from !== undefined) {
          tx.emit(await to(e.data.channel), { type: 'VoiceChannelMove', user: e.data.user, from: e.data.moved_from, to: e.data.channel, state: voice });
          // Those who see only the old channel hear that the user left it.
          tx.emit(await to(e.data.moved_from), { type: 'VoiceChannelLeave', id: e.data.moved_from, user: e.data.user });
        } else {
          tx.emit(await to(e.data.channel), { type: 'VoiceChannelJoin', id: e.data.channel, state: voice });
        }
        break;
      }
      case 'VoiceParticipantLeft':
        delete state.participants[e.data.user];
        // The last one out of a DM's or group's call ends it.
        if (state.calls?.[e.data.channel] !== undefined && !Object.values(state.participants).some((p) => p.channel === e.data.channel)) {
          const { [e.data.channel]: _ended, ...rest } = state.calls;
          if (Object.keys(rest).length > 0) state.calls = rest;
          else delete state.calls;
          tx.emit(await to(e.data.channel), { type: 'VoiceChannelLeave', id: e.data.channel, user: e.data.user });
          tx.emit(await to(e.data.channel), { type: 'VoiceCallUpdate', initiator_id: e.data.user, channel_id: e.data.channel, started_at: null, ended: true });
          break;
        }
        tx.emit(await to(e.data.channel), { type: 'VoiceChannelLeave', id: e.data.channel, user: e.data.user });
        break;
      case 'VoiceStateUpdated': {
        const p = state.participants[e.data.user];
        if (p) Object.assign(p.state, e.data.data);
        tx.emit(await to(e.data.channel), { type: 'UserVoiceStateUpdate', id: e.data.user, channel_id: e.data.channel, data: e.data.data });
        break;
      }
      case 'MemberEdited': {
        const p = state.participants[e.data.userId];
        const canReceive = e.data.data.can_receive;
        if (!p || canReceive === undefined || p.state.is_receiving === canReceive) return;
        p.state.is_receiving = canReceive;
        tx.emit({ kind: 'channel', serverId, channelId: p.channel }, { type: 'UserVoiceStateUpdate', id: e.data.userId, channel_id: p.channel, data: { is_receiving: canReceive } });
        break;
      }
      case 'ChannelDeleted': {
        let changed = false;
        for (const [user, p] of Object.entries(state.participants)) {
          if (p.channel === e.data.channelId) {
            delete state.participants[user];
            changed = true;
          }
        }
        if (!changed) return;
        break;
      }
      case 'ServerDeleted':
      case 'GroupDeleted':
        tx.del(key);
        return;
      default:
        return;
    }
    if (isVoiceStream) state.revision = e.revision;
    tx.setJson(key, state);
  },
};
