// POST /channels/:channel_id/join_call — {node?, force_disconnect?, recipients?} → {token, url}: a LiveKit join token (Connect)
// for a server voice channel, a DM or a group (400 AlreadyConnected while in a call, unless force_disconnect).
import { z } from 'zod';
import { channelAccess } from '../../../access.ts';
import type { UserProfile } from '../../../domain/account/state.ts';
import { AppError, unavailable } from '../../../errors.ts';
import { Permission } from '../../../permissions/bits.ts';
import { require as requirePermission } from '../../../permissions/calculate.ts';
import { rm } from '../../../readmodel/keys.ts';
import { createJoinToken, LIVEKIT_NODE } from '../../../voice/token.ts';
import { defineRoute } from '../../route.ts';
import type { ServerVoiceState } from '../../../domain/voice/state.ts';
import { rememberRing } from '../../../voice/ring.ts';
import { disconnectEverywhere, voiceChannelsOf } from '../../../voice/sessions.ts';
import { idString } from '../../schemas.ts';

// Stoat's DataJoinCall. Who is in which call is the voice presence LiveKit's webhooks keep (projection
// `voice`): a user already in a call is refused (AlreadyConnected) unless `force_disconnect` asks to leave it.
const Body = z.strictObject({
  /** LiveKit node to join: the one node of `GET /` (`features.livekit.nodes`); another name → 400 UnknownNode. */
  node: z.string().min(1).max(128).nullish(),
  /**
   * Stoat's: true removes the user from every call they are in (LiveKit RemoveParticipant) before the token is
   * made; without it, a user in a call already gets 400 AlreadyConnected.
   */
  force_disconnect: z.boolean().nullish(),
  /**
   * In a DM or group: who to ring when this join starts the call (nobody in it yet); without it, every other
   * recipient is rung (src/voice/ring.ts). Ignored in a server voice channel, as in Stoat.
   */
  recipients: z.array(idString).max(100).nullish(),
});

export default defineRoute({
  method: 'POST',
  path: '/channels/:channel_id/join_call',
  auth: 'user',
  noBots: true,
  body: Body,
  permissions: ['Connect'],
  async handler({ deps, caller, params, body }) {
    // Membership first (404), then the right to join, before saying anything about the channel itself.
    const a = await channelAccess(deps, params.channel_id!, caller.userId);
    requirePermission(a.permissions, Permission.Connect);
    // Stoat's `Channel::voice()`: a server channel with voice settings, and every DM and group (a call there);
    // Saved Notes and text channels are no voice channels.
    const voiceOf: { max_users?: number | undefined } | undefined = a.kind === 'server' ? a.channel.voice : a.channel.channel_type === 'DirectMessage' || a.channel.channel_type === 'Group' ? {} : undefined;
    if (voiceOf === undefined) throw new AppError({ type: 'NotAVoiceChannel' });
    // Voice channels made while voice was on stay readable after it is turned off, but nobody can join them.
    const voice = deps.config.voice;
    if (!voice.enabled) throw new AppError({ type: 'FeatureDisabled', feature: 'voice' });
    if (body.node != null && body.node !== LIVEKIT_NODE) throw new AppError({ type: 'UnknownNode' });

    const current = await voiceChannelsOf(deps, caller.userId);
    if (current.length > 0) {
      if (body.force_disconnect !== true) throw new AppError({ type: 'AlreadyConnected' });
      try {
        await disconnectEverywhere(voice, caller.userId, current);
      } catch {
        throw new AppError({ type: 'LiveKitUnavailable' });
      }
    }

    const profile = await deps.readModels.getJson<UserProfile>(rm.user(caller.userId));
    // An onboarded caller always has a profile; without one the read models are behind or rebuilding.
    if (!profile) throw unavailable();
    const token = await createJoinToken(voice, {
      room: a.channel._id,
      identity: caller.userId,
      name: profile.display_name ?? profile.username,
      permissions: a.permissions,
      maxUsers: voiceOf.max_users,
    });
    if (a.kind === 'private' && body.recipients != null && body.recipients.length > 0) {
      const call = await deps.readModels.getJson<ServerVoiceState>(rm.serverVoice(a.channel._id));
      if (!Object.values(call?.participants ?? {}).some((p) => p.channel === a.channel._id)) {
        await rememberRing(deps.readModels.redis, deps.config.redisPrefix, a.channel._id, caller.userId, body.recipients);
      }
    }
    return { token, url: voice.url };
  },
});
