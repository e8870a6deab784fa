/**
 * Join tokens for LiveKit, made with the official `livekit-server-sdk` (`AccessToken` + `VideoGrant`), and
 * the one LiveKit node this service advertises (`GET /` → `features.livekit.nodes`).
 */
import { joinGrant } from './grants.ts';
import { livekitSdk } from './sdk.ts';

/** Name of the single LiveKit node (LIVEKIT_URL) in `GET /` and the only `node` join_call accepts. */
export const LIVEKIT_NODE = 'default';

/**
 * Lifetime of a join token, in seconds. LiveKit checks expiry only when a participant first connects (it
 * hands connected participants refreshed tokens itself), so this is the window in which a token fetched
 * from join_call can still be used to enter the room. Two minutes covers a slow mobile client that retries
 * its first connection (Stoat's 10 s proved too short in practice), and bounds how long a token outlives a
 * change of the caller's rights: a member who loses Connect, is timed out, kicked or banned cannot join with
 * a token fetched more than two minutes earlier.
 */
export const JOIN_TOKEN_TTL_SECONDS = 120;

/** LiveKit API credentials (LIVEKIT_API_KEY, LIVEKIT_API_SECRET). */
export interface LiveKitCredentials {
  apiKey: string;
  apiSecret: string;
}

/** Who joins which room with which resolved channel permissions. */
export interface JoinTokenInput {
  /** The voice channel id, used as the room name. */
  room: string;
  /** The user id, the participant identity. */
  identity: string;
  /** The participant's display name (the user's display name, else the username). */
  name: string;
  /** Channel permissions after the eight steps (`channelAccess`). */
  permissions: bigint;
  /**
   * The channel's `voice.max_users`. LiveKit knows who is in a room, so it enforces the cap: the token carries
   * it as the room configuration, which LiveKit applies when this join creates the room.
   */
  maxUsers?: number | undefined;
}

/** A signed (HS256) LiveKit access token for `input`, valid for JOIN_TOKEN_TTL_SECONDS. */
export async function createJoinToken(credentials: LiveKitCredentials, input: JoinTokenInput): Promise<string> {
  const { AccessToken, RoomConfiguration } = await livekitSdk();
  const token = new AccessToken(credentials.apiKey, credentials.apiSecret, {
    identity: input.identity,
    name: input.name,
    ttl: JOIN_TOKEN_TTL_SECONDS,
  });
  token.addGrant(joinGrant(input.permissions, input.room));
  if (input.maxUsers !== undefined) token.roomConfig = new RoomConfiguration({ name: input.room, maxParticipants: input.maxUsers });
  return token.toJwt();
}
