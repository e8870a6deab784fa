/**
 * LiveKit's side of voice, for tests: webhooks signed as LiveKit signs them (a JWT of the API key whose
 * `sha256` claim is the body's hash), and the events presence uses.
 */
import { createHash } from 'node:crypto';
import { AccessToken } from 'livekit-server-sdk';
import { newId } from '../../src/ids.ts';
import { request } from './http.ts';
import type { TestService } from './service.ts';

/** Posts a webhook signed with `key` / `secret` (or not signed, or with its body altered after signing). */
export async function livekitWebhook(
  s: Pick<TestService, 'apiUrl'>,
  auth: { key: string; secret: string },
  event: Record<string, unknown>,
  o: { unsigned?: boolean; tamper?: boolean } = {},
) {
  const raw = JSON.stringify({ id: `EV_${newId()}`, createdAt: String(Math.floor(Date.now() / 1000)), ...event });
  const at = new AccessToken(auth.key, auth.secret);
  at.sha256 = createHash('sha256').update(raw).digest('base64');
  const token = await at.toJwt();
  const sent = o.tamper ? raw.replace('"event":"', '"event":"x') : raw;
  return request(s.apiUrl, 'POST', '/livekit/webhook', {
    rawBody: sent,
    contentType: 'application/webhook+json',
    headers: o.unsigned ? {} : { Authorization: token },
    skipOpenApi: true,
  });
}

export const joined = (channel: string, user: string, createdAt = 1_700_000_000) => ({ event: 'participant_joined', createdAt: String(createdAt), room: { sid: 'RM_1', name: channel }, participant: { sid: 'PA_1', identity: user } });
export const left = (channel: string, user: string) => ({ event: 'participant_left', room: { sid: 'RM_1', name: channel }, participant: { sid: 'PA_1', identity: user } });
export const track = (event: string, channel: string, user: string, source: string) => ({ event, room: { sid: 'RM_1', name: channel }, participant: { sid: 'PA_1', identity: user }, track: { sid: 'TR_1', source, type: source === 'MICROPHONE' ? 'AUDIO' : 'VIDEO' } });
