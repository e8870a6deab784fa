/**
 * LiveKit's server API (RoomService), as this service uses it: moving a participant between rooms, updating
 * a participant's permissions to match their channel permissions, and removing them. The client is
 * livekit-server-sdk's, authenticated with LIVEKIT_API_KEY/LIVEKIT_API_SECRET against LIVEKIT_URL's host.
 */
import type { RoomServiceClient } from 'livekit-server-sdk';
import { AppError } from '../errors.ts';
import { publishSources } from './grants.ts';
import { livekitSdk } from './sdk.ts';
import { Permission } from '../permissions/bits.ts';
import { has } from '../permissions/calculate.ts';

/** LiveKit's HTTP API base from LIVEKIT_URL (clients get ws(s)://, the server API is the same host over http(s)). */
export function livekitApiUrl(url: string): string {
  return url.replace(/^ws(s?):\/\//, 'http$1://');
}

/** A RoomService client for the configured LiveKit (async: the SDK is loaded on first use). */
export async function roomService(voice: { url: string; apiKey: string; apiSecret: string }): Promise<RoomServiceClient> {
  const { RoomServiceClient } = await livekitSdk();
  return new RoomServiceClient(livekitApiUrl(voice.url), voice.apiKey, voice.apiSecret);
}

/** True when LiveKit answered that the room or participant does not exist (Twirp `not_found`). */
export function isNotFound(err: unknown): boolean {
  return (err as { code?: unknown })?.code === 'not_found' || /not.?found/i.test(String((err as Error)?.message ?? err));
}

/**
 * The participant permission a connected member should have from their channel permissions: the same
 * capabilities as `joinGrant` gives a join token (publish sources ⇐ Speak/Video, subscribe ⇐ Listen, data ⇐
 * Speak), written out in full, because LiveKit replaces a participant's permission as a whole.
 */
export function participantPermission(permissions: bigint) {
  const sources = publishSources(permissions);
  return {
    canSubscribe: has(permissions, Permission.Listen),
    canPublish: sources.length > 0,
    canPublishData: has(permissions, Permission.Speak),
    canPublishSources: sources,
    canUpdateMetadata: false,
  };
}

/** A stable text of a participant permission, to tell whether it changed. */
export function permissionKey(permissions: bigint): string {
  const p = participantPermission(permissions);
  return `${+p.canSubscribe}${+p.canPublish}${+p.canPublishData}:${[...p.canPublishSources].sort().join(',')}`;
}

/**
 * Moves a connected participant from room `from` to room `to` (MoveParticipant). LiveKit answering not_found
 * (they left meanwhile) → 400 NotConnected; LiveKit unreachable or failing → 400 LiveKitUnavailable.
 */
export async function moveParticipant(rooms: RoomServiceClient, from: string, identity: string, to: string): Promise<void> {
  try {
    await rooms.moveParticipant(from, identity, to);
  } catch (err) {
    if (isNotFound(err)) throw new AppError({ type: 'NotConnected' });
    throw new AppError({ type: 'LiveKitUnavailable' });
  }
}
