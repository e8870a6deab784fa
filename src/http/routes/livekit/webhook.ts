// POST /livekit/webhook — LiveKit's webhooks (signed with LIVEKIT_API_KEY/SECRET) → voice presence events. 200 `{}`.
import type Koa from 'koa';
import type { WebhookEvent, WebhookReceiver } from 'livekit-server-sdk';
import { loadChannel, loadPrivateChannel } from '../../../access.ts';
import { voiceStream } from '../../../domain/voice/events.ts';
import { decideVoice, endedCall, type ServerVoiceState, type VoiceReport } from '../../../domain/voice/state.ts';
import type { Write } from '../../../commands.ts';
import type { DomainEvent } from '../../../domain/events.ts';
import { messageStream, SYSTEM_AUTHOR } from '../../../domain/message/events.ts';
import { loadMessage } from '../../../readmodel/messages.ts';
import { AppError } from '../../../errors.ts';
import { isUlid, newId } from '../../../ids.ts';
import { rm } from '../../../readmodel/keys.ts';
import type { PrivateChannelState } from '../../../domain/private/state.ts';
import { takeRing } from '../../../voice/ring.ts';
import { livekitSdk } from '../../../voice/sdk.ts';
import type { AppDeps } from '../../deps.ts';
import { defineRoute } from '../../route.ts';
import { readRawBody } from '../../body.ts';

/** Largest webhook body read (bytes); a larger one fails verification. */
const WEBHOOK_BODY_LIMIT = 64_000;

/** One receiver per key pair (the configuration does not change while the process runs). */
const receivers = new Map<string, WebhookReceiver>();
async function receiverFor(apiKey: string, apiSecret: string): Promise<WebhookReceiver> {
  const id = `${apiKey}\u0000${apiSecret}`;
  let r = receivers.get(id);
  if (!r) {
    const { WebhookReceiver } = await livekitSdk();
    receivers.set(id, (r = new WebhookReceiver(apiKey, apiSecret)));
  }
  return r;
}

/**
 * Verifies the request's signature (a JWT of the API key whose `sha256` claim is the body's hash, in
 * `Authorization`) over the raw body; the event, or an AppError (401) for an unsigned or forged request.
 * Cached on the request, so the rate-limit check and the handler verify once.
 */
async function verified(ctx: Koa.Context, deps: AppDeps): Promise<WebhookEvent> {
  const cached = ctx.state.livekitEvent as WebhookEvent | AppError | undefined;
  if (cached === undefined) {
    const voice = deps.config.voice;
    let result: WebhookEvent | AppError;
    if (!voice.enabled) result = new AppError({ type: 'FeatureDisabled', feature: 'voice' });
    else {
      const auth = ctx.get('Authorization');
      // The body is read only for a request that carries a signature, and bounded (LiveKit's are a few KB).
      const raw = auth ? await readRawBody(ctx, WEBHOOK_BODY_LIMIT).catch(() => '') : '';
      if (!auth) result = new AppError({ type: 'NotAuthenticated' });
      else if (raw.length === 0) result = new AppError({ type: 'InvalidCredentials' });
      else {
        const receiver = await receiverFor(voice.apiKey, voice.apiSecret);
        try {
          result = await receiver.receive(raw, auth.replace(/^Bearer\s+/i, ''));
        } catch {
          result = new AppError({ type: 'InvalidCredentials' });
        }
      }
    }
    ctx.state.livekitEvent = result;
  }
  const r = ctx.state.livekitEvent as WebhookEvent | AppError;
  if (r instanceof AppError) throw r;
  return r;
}

/** LiveKit's TrackSource numbers: 1 camera, 2 microphone, 3 screen share, 4 screen-share audio. */
function sourceOf(n: number | undefined): 'microphone' | 'camera' | 'screen' | undefined {
  return n === 1 ? 'camera' : n === 2 ? 'microphone' : n === 3 || n === 4 ? 'screen' : undefined;
}

/** The presence report of a webhook, or undefined for events presence does not use. */
function reportOf(e: WebhookEvent, channel: string, user: string): VoiceReport | undefined {
  const name: string = e.event;
  switch (name) {
    case 'participant_joined':
      return { kind: 'joined', channel, user, at: Number(e.createdAt) * 1000 };
    case 'participant_left':
    case 'participant_connection_aborted':
      return { kind: 'left', channel, user };
    case 'track_published':
    case 'track_unmuted':
    case 'track_unpublished':
    case 'track_muted': {
      const source = sourceOf(e.track?.source as number | undefined);
      if (!source) return undefined;
      return { kind: 'track', channel, user, source, on: name === 'track_published' || name === 'track_unmuted' };
    }
    default:
      return undefined;
  }
}

/**
 * Whose voice presence a room belongs to: a voice channel's server, or a DM's or group's own id (with the
 * channel: its call rings its recipients); undefined for any other room.
 */
async function voiceScopeOf(deps: AppDeps, channelId: string): Promise<{ scope: string; call?: PrivateChannelState } | undefined> {
  const channel = await loadChannel(deps, channelId);
  if (channel) return channel.voice ? { scope: channel.server } : undefined;
  const priv = await loadPrivateChannel(deps, channelId);
  return priv && (priv.channel_type === 'DirectMessage' || priv.channel_type === 'Group') ? { scope: priv._id, call: priv } : undefined;
}

/**
 * The `call_started` system message of a DM's or group's call, appended with the voice event: posted by the
 * join that starts the call, its `finished_at` set by the leave that ends it (Stoat's CallStarted).
 */
async function callMessageWrites(deps: AppDeps, scope: string, state: ServerVoiceState | null, report: VoiceReport, events: DomainEvent[]): Promise<Write[]> {
  const joined = events.find((e) => e.type === 'VoiceParticipantJoined');
  if (joined?.type === 'VoiceParticipantJoined' && joined.data.call_message !== undefined) {
    const message = { _id: joined.data.call_message, channel: joined.data.channel, author: SYSTEM_AUTHOR, system: { type: 'call_started' as const, by: joined.data.user } };
    return [{ stream: messageStream(message._id), scope, expected: 'no_stream', events: [{ type: 'MessageSent', data: { message } }] }];
  }
  const ended = endedCall(state, report, events);
  if (ended === undefined) return [];
  const message = await loadMessage(deps.readModels, report.channel, ended);
  // Deleted meanwhile, or already finished: nothing to write.
  if (!message || message.system?.type !== 'call_started' || message.system.finished_at !== undefined) return [];
  return [{ stream: messageStream(ended), scope, expected: message.revision, events: [{ type: 'CallFinished', data: { channel: report.channel, finished_at: new Date(deps.now()).toISOString() } }] }];
}

export default defineRoute({
  method: 'POST',
  path: '/livekit/webhook',
  auth: 'none',
  // A verified webhook is LiveKit itself: its bursts (a room filling up) are never refused as a client would be.
  async unmetered(ctx, deps) {
    try {
      await verified(ctx, deps);
      return true;
    } catch {
      return false;
    }
  },
  async handler(rc) {
    const e = await verified(rc.ctx, rc.deps);
    const channelId = e.room?.name ?? '';
    const userId = e.participant?.identity ?? '';
    // Rooms are channel ids and identities user ids (join_call's tokens); anything else is not ours.
    if (!isUlid(channelId) || !isUlid(userId)) return {};
    const report = reportOf(e, channelId, userId);
    if (!report) return {};
    // A server voice channel's presence is its server's (one voice channel per server); a DM's or a group's
    // call is its own.
    const where = await voiceScopeOf(rc.deps, channelId);
    if (where === undefined) return {};
    const { scope, call } = where;
    // A DM's or group's call: should this join start it (decideVoice decides), who it rings and its message's id.
    if (call && report.kind === 'joined') {
      report.start = { ring: await takeRing(rc.deps.readModels.redis, rc.deps.config.redisPrefix, call, userId), message: newId(rc.deps.now()) };
    }
    const stream = voiceStream(scope);
    await rc.deps.executor.execute({ ...rc.meta, actor: userId }, [stream], async () => {
      const state = await rc.deps.readModels.getJson<ServerVoiceState>(rm.serverVoice(scope));
      const revision = state?.revision ?? -1;
      const events = decideVoice(state, report);
      const writes: Write[] = [{ stream, scope, expected: revision < 0 ? 'no_stream' : revision, events }];
      if (call) writes.push(...(await callMessageWrites(rc.deps, scope, state, report, events)));
      return { writes, result: undefined };
    });
    return {};
  },
});
