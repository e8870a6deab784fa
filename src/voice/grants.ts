/**
 * What a LiveKit join token may do, derived from the caller's resolved channel permissions (spec "Joining a
 * voice channel is gated on Connect. The subscription right of the voice session token is derived from
 * Listen"; DESIGN §4 "voice"). Pure: the permission value already went through the eight steps, so
 * can_publish = false (step 5), can_receive = false (step 6) and a timeout (step 7) are already in it.
 */
import type { TrackSource, VideoGrant } from 'livekit-server-sdk';
import { Permission } from '../permissions/bits.ts';
import { has } from '../permissions/calculate.ts';

/**
 * LiveKit's TrackSource numbers (livekit.TrackSource in its protocol), written here so that this pure module does
 * not load the SDK (`src/voice/sdk.ts`); `voice.test` checks them against the SDK's enum.
 */
const SOURCE = { CAMERA: 1 as TrackSource, MICROPHONE: 2 as TrackSource, SCREEN_SHARE: 3 as TrackSource, SCREEN_SHARE_AUDIO: 4 as TrackSource };

/** The track sources `permissions` allow: microphone ⇐ Speak; camera, screen share and its audio ⇐ Video. */
export function publishSources(permissions: bigint): TrackSource[] {
  const sources: TrackSource[] = [];
  if (has(permissions, Permission.Speak)) sources.push(SOURCE.MICROPHONE);
  if (has(permissions, Permission.Video)) sources.push(SOURCE.CAMERA, SOURCE.SCREEN_SHARE, SOURCE.SCREEN_SHARE_AUDIO);
  return sources;
}

/**
 * The video grant of a join token for `room` (the channel id). Every capability is written out, because
 * LiveKit fills in generous defaults for missing ones (neither canPublish nor canSubscribe set = both; no
 * canPublishData = true; an empty canPublishSources with canPublish = every source):
 * - roomJoin ⇐ Connect;
 * - canPublishSources as `publishSources`, canPublish only when there is at least one source;
 * - canSubscribe ⇐ Listen (Connect + Speak without Listen joins and hears nothing);
 * - canPublishData ⇐ Speak: data messages (in-call chat, reactions) are speaking to the room, so a member
 *   without Speak, or muted with can_publish = false, sends none (Stoat's permission sync does the same);
 * - canUpdateOwnMetadata false: the participant's name and identity are ours, not the client's to change.
 */
export function joinGrant(permissions: bigint, room: string): VideoGrant {
  const sources = publishSources(permissions);
  return {
    room,
    roomJoin: has(permissions, Permission.Connect),
    canPublish: sources.length > 0,
    canPublishSources: sources,
    canSubscribe: has(permissions, Permission.Listen),
    canPublishData: has(permissions, Permission.Speak),
    canUpdateOwnMetadata: false,
  };
}
