/**
 * The client address behind trusted proxies (TRUST_PROXY): X-Forwarded-For is believed only from a trusted
 * peer, read from the right past trusted hops; it then keys the rate limiter of requests without a session and
 * the events gateway's per-address socket cap. Without TRUST_PROXY a client cannot choose its address.
 */
import t from 'tap';
import { WebSocket } from 'ws';
import { clientAddress } from '../src/http/clientAddress.ts';
import { parseAllowList } from '../src/outbound/policy.ts';
import { ConfigError, loadConfig } from '../src/config.ts';
import { request } from './helpers/http.ts';
import { startTestService } from './helpers/service.ts';

t.test('clientAddress', async (t) => {
  const local = parseAllowList('127.0.0.1,10.0.0.0/8');
  t.equal(clientAddress('127.0.0.1', '9.9.9.9', []), '127.0.0.1', 'nothing trusted: the peer, header ignored');
  t.equal(clientAddress('203.0.113.5', '9.9.9.9', local), '203.0.113.5', 'an untrusted peer: its header is ignored');
  t.equal(clientAddress('127.0.0.1', '9.9.9.9', local), '9.9.9.9', 'a trusted peer: the hop it names');
  t.equal(clientAddress('::ffff:127.0.0.1', '9.9.9.9', local), '9.9.9.9', 'an IPv4-mapped peer matches its IPv4 range');
  t.equal(clientAddress('127.0.0.1', '6.6.6.6, 9.9.9.9, 10.1.2.3', local), '9.9.9.9', 'from the right, past trusted hops; a spoofed left entry is not reached');
  t.equal(clientAddress('127.0.0.1', ['6.6.6.6', '9.9.9.9'], local), '9.9.9.9', 'several headers read as one list');
  t.equal(clientAddress('127.0.0.1', '10.0.0.1, 10.0.0.2', local), '10.0.0.1', 'every hop trusted: the leftmost');
  t.equal(clientAddress('127.0.0.1', 'junk, 9.9.9.9', local), '9.9.9.9', 'an untrusted hop stops before junk');
  t.equal(clientAddress('127.0.0.1', '9.9.9.9, junk', local), '127.0.0.1', 'a malformed hop ends the chain at the last vouched address');
  t.equal(clientAddress('127.0.0.1', undefined, local), '127.0.0.1', 'no header: the peer');
  t.equal(clientAddress('::ffff:127.0.0.1', undefined, []), '127.0.0.1', 'IPv4-mapped addresses are written as IPv4');
  t.throws(() => loadConfig({ TRUST_PROXY: 'not-an-address' }), ConfigError);
  t.equal(loadConfig({}).trustProxy.length, 0, 'off by default');
});

/** X-RateLimit-Remaining of three unauthenticated requests as `forwarded`, then one as `other`. */
async function budgets(apiUrl: string, forwarded: string, other: string): Promise<number[]> {
  const out: number[] = [];
  for (const xff of [forwarded, forwarded, forwarded, other]) {
    const r = await request(apiUrl, 'GET', '/no-such-route', { headers: { 'X-Forwarded-For': xff }, skipOpenApi: true });
    out.push(Number(r.headers.get('x-ratelimit-remaining')));
  }
  return out;
}

/** Status of a WebSocket upgrade sent with this X-Forwarded-For (101 or the refusal's status). */
function upgrade(apiUrl: string, xff: string, open: WebSocket[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${apiUrl.replace(/^http/, 'ws')}/ws?version=1`, { headers: { 'X-Forwarded-For': xff } });
    ws.once('open', () => {
      open.push(ws);
      resolve(101);
    });
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('error', reject);
  });
}

t.test('TRUST_PROXY set: each forwarded client has its own budget and socket cap', async (t) => {
  const s = await startTestService(t, { TRUST_PROXY: '127.0.0.1', GATEWAY_MAX_SOCKETS_PER_ADDRESS: '1' });
  t.same(await budgets(s.apiUrl, '198.51.100.1', '198.51.100.2'), [19, 18, 17, 19], 'another client starts with a full budget');
  const open: WebSocket[] = [];
  t.teardown(() => open.forEach((w) => w.close()));
  t.equal(await upgrade(s.apiUrl, '198.51.100.1', open), 101);
  t.equal(await upgrade(s.apiUrl, '198.51.100.1', open), 429, 'the same client: over its cap of 1');
  t.equal(await upgrade(s.apiUrl, '198.51.100.2', open), 101, 'another client behind the proxy: its own cap');
});

t.test('TRUST_PROXY unset: X-Forwarded-For is ignored', async (t) => {
  const s = await startTestService(t, { GATEWAY_MAX_SOCKETS_PER_ADDRESS: '1' });
  t.same(await budgets(s.apiUrl, '198.51.100.1', '198.51.100.2'), [19, 18, 17, 16], 'one budget for the one peer, whatever the header says');
  const open: WebSocket[] = [];
  t.teardown(() => open.forEach((w) => w.close()));
  t.equal(await upgrade(s.apiUrl, '198.51.100.1', open), 101);
  t.equal(await upgrade(s.apiUrl, '198.51.100.2', open), 429, 'a forged header does not buy another socket');
});
