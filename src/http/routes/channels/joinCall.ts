// POST /channels/:channel_id/join_call — {node?, force_disconnect?, recipients?} → {token, url}: a LiveKit join token (Connect)
// for a server voice channel, a DM or a group.
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
import { idString } from '../../schemas.ts';

// Stoat's DataJoinCall. This service hands out tokens and keeps no record of who is in which call (only
// LiveKit knows), so the two fields about other sessions are accepted and not acted on.
const Body = z.strictObject({
  /** LiveKit node to join: the one node of `GET /` (`features.livekit.nodes`); another name → 400 UnknownNode. */
  node: z.string().min(1).max(128).nullish(),
  /**
   * Accepted, not acted on: LiveKit itself disconnects an earlier session of the same identity in the same
   * room, and no other session is known here (so there is no AlreadyConnected either).
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
