/**
 * Several API processes behind Debian's nginx, with the configuration `npm run -s nginx-config` prints:
 * - the generated file passes `nginx -t`; docker-compose.yml's copy equals the generator's output and the
 *   compose file passes `docker-compose config`;
 * - routing, seen by two recording upstreams: one caller (session token, bot token, a webhook's path token, or
 *   else its address) always reaches the same upstream, and different callers spread; X-Forwarded-For is the
 *   address nginx saw, never what the client sent; the WebSocket upgrade passes; upload bodies stream;
 * - end to end with two real API processes: one Idempotency-Key sent three times appends one message, the
 *   messaging bucket refuses the 11th send in 10 s, a Message reaches sockets on both processes, and media
 *   uploads go through the media listen.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import path from 'node:path';
import t from 'tap';
import type * as Tap from 'tap';
import { WebSocket, WebSocketServer } from 'ws';
import { nodeArgs } from '../src/built.ts';
import { nginxConfig } from '../src/deploy/nginx.ts';
import { signup } from './helpers/http.ts';
import { png, upload } from './helpers/media.ts';
import { freePort, nginxBinary, nginxTest, runNginx } from './helpers/nginx.ts';
import { startRoleProcess } from './helpers/processes.ts';
import { createServer, join } from './helpers/servers.ts';
import { startTestService, TEST_REDIS_URL } from './helpers/service.ts';
import { until, WAIT_MS } from './helpers/wait.ts';
import { connectReady } from './helpers/ws.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

// Fails (not skips) where nginx is missing, with the install command.
nginxBinary();

t.test('the generated configuration passes nginx -t; docker-compose.yml uses the generator output and passes docker-compose config', async (t) => {
  const conf = nginxConfig({ listen: '127.0.0.1:18080', api: ['127.0.0.1:18081', '127.0.0.1:18082'], mediaListen: '127.0.0.1:18090', media: ['127.0.0.1:18091'] });
  const tested = nginxTest(t, conf);
  t.equal(tested.status, 0, tested.output);
  t.match(tested.output, /test is successful/);
  const cli = spawnSync(process.execPath, [...nodeArgs('src/cli/nginxConfig.ts'), '--listen', '127.0.0.1:18080', '--api', '127.0.0.1:18081,127.0.0.1:18082', '--media-listen', '127.0.0.1:18090', '--media', '127.0.0.1:18091'], { cwd: ROOT, encoding: 'utf8' });
  t.equal(cli.status, 0, cli.stderr);
  t.equal(cli.stdout, conf, 'the npm script prints the same text');
  const bad = spawnSync(process.execPath, [...nodeArgs('src/cli/nginxConfig.ts'), '--listen', '127.0.0.1', '--api', 'x:1', '--media-listen', 'y:2', '--media', 'z:3'], { cwd: ROOT, encoding: 'utf8' });
  t.same([bad.status, /--listen: "127.0.0.1" is not HOST:PORT/.test(bad.stderr)], [2, true], 'a bad address: exit 2 and one line naming it');

  // docker-compose.yml mounts deploy/nginx.conf, generated for the compose services' names.
  const compose = fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8');
  const command = /npm run -s nginx-config -- (.+?) > deploy\/nginx\.conf/.exec(compose);
  t.ok(command, 'docker-compose.yml names the command that wrote deploy/nginx.conf');
  const args = command![1]!.split(/\s+/);
  const generated = spawnSync(process.execPath, [...nodeArgs('src/cli/nginxConfig.ts'), ...args], { cwd: ROOT, encoding: 'utf8' });
  t.equal(generated.status, 0, generated.stderr);
  t.equal(fs.readFileSync(path.join(ROOT, 'deploy/nginx.conf'), 'utf8'), generated.stdout, 'deploy/nginx.conf is the generator output');
  t.match(compose, /\.\/deploy\/nginx\.conf:\/etc\/stoat\/nginx\.conf:ro/, 'the nginx service mounts it');
  const config = spawnSync('docker-compose', ['-f', 'docker-compose.yml', 'config', '-q'], { cwd: ROOT, encoding: 'utf8' });
  if (config.error) throw new Error('docker-compose is not installed: `apt-get install -y docker-compose` (.ci/run installs it when missing)');
  t.equal(config.status, 0, `docker-compose config: ${config.stderr}`);
});

/** A recording stand-in for an API or media process: answers which upstream it is, and what it was sent. */
interface StandIn {
  n: number;
  address: string;
  requests: Array<{ url: string; headers: http.IncomingHttpHeaders }>;
  /** Chunks of the current request body as they arrive. */
  bodyChunks: Buffer[];
  server: http.Server;
}

async function standIn(t: Tap.Test, n: number): Promise<StandIn> {
  const s: StandIn = { n, address: '', requests: [], bodyChunks: [], server: http.createServer() };
  s.server.on('request', (req, res) => {
    s.requests.push({ url: req.url ?? '', headers: req.headers });
    req.on('data', (c: Buffer) => s.bodyChunks.push(c));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ upstream: n, forwardedFor: req.headers['x-forwarded-for'] ?? null, bytes: s.bodyChunks.reduce((a, c) => a + c.length, 0) }));
    });
  });
  const wss = new WebSocketServer({ server: s.server, path: '/ws' });
  wss.on('connection', (ws) => ws.send(JSON.stringify({ upstream: n })));
  await new Promise<void>((r) => s.server.listen(0, '127.0.0.1', r));
  s.address = `127.0.0.1:${(s.server.address() as net.AddressInfo).port}`;
  t.teardown(() => {
    wss.close();
    s.server.closeAllConnections();
    return new Promise<void>((r) => s.server.close(() => r()));
  });
  return s;
}

/** One request through nginx from a chosen loopback source address; the upstream's answer. */
function via(url: string, o: { method?: string; headers?: Record<string, string>; from?: string; body?: string } = {}): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: o.method ?? 'GET', headers: o.headers ?? {}, localAddress: o.from ?? '127.0.0.1', agent: false }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : undefined });
        } catch {
          reject(new Error(`not JSON (${res.statusCode}): ${text.slice(0, 200)}`));
        }
      });
    });
    req.on('error', reject);
    req.end(o.body);
  });
}

t.test('routing through nginx, seen by two recording upstreams', async (t) => {
  const apis = [await standIn(t, 0), await standIn(t, 1)];
  const media = [await standIn(t, 10), await standIn(t, 11)];
  const [port, mediaPort] = [await freePort(), await freePort()];
  const conf = nginxConfig({ listen: `127.0.0.1:${port}`, api: apis.map((a) => a.address), mediaListen: `127.0.0.1:${mediaPort}`, media: media.map((m) => m.address) });
  const base = `http://127.0.0.1:${port}`;
  await runNginx(t, conf, `${base}/`);

  /** For 16 callers, each sent 3 times: every caller reaches one upstream, and the callers use both. */
  const routesByCaller = async (what: string, send: (caller: number, attempt: number) => Promise<{ body: any }>) => {
    const seen = new Set<number>();
    let consistent = true;
    for (let caller = 0; caller < 16; caller++) {
      const upstreams = new Set<number>();
      for (let attempt = 0; attempt < 3; attempt++) upstreams.add((await send(caller, attempt)).body.upstream);
      if (upstreams.size !== 1) consistent = false;
      upstreams.forEach((u) => seen.add(u));
    }
    t.ok(consistent, `${what}: one caller always reaches the same upstream`);
    t.same([...seen].sort(), [0, 1], `${what}: the callers spread over both upstreams`);
  };
  const paths = ['/users/@me', '/channels/01ABC/messages', '/servers/01DEF'];
  await routesByCaller('x-session-token', (c, a) => via(`${base}${paths[a]}`, { headers: { 'x-session-token': `session-${c}` }, from: `127.0.0.${2 + a}` }));
  await routesByCaller('x-bot-token', (c, a) => via(`${base}${paths[a]}`, { headers: { 'x-bot-token': `bot-${c}` }, from: `127.0.0.${2 + a}` }));
  await routesByCaller("a webhook's path token", (c, a) =>
    via(`${base}/webhooks/01WEBHOOK${a}/token-${c}${a === 2 ? '/github' : ''}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}', from: `127.0.0.${2 + a}` }),
  );
  await routesByCaller('no token: the client address', (c, a) => via(`${base}${paths[a]}`, { from: `127.0.0.${10 + c}` }));

  const spoofed = await via(`${base}/users/@me`, { headers: { 'x-forwarded-for': '6.6.6.6' }, from: '127.0.0.7' });
  t.equal(spoofed.body.forwardedFor, '127.0.0.7', 'X-Forwarded-For is the address nginx saw, not what the client sent');

  // The WebSocket upgrade passes (Upgrade/Connection headers) and hashes by address like the rest.
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?version=1&token=abc`, { localAddress: '127.0.0.9' });
  const hello = await new Promise<any>((resolve, reject) => {
    ws.once('message', (d) => resolve(JSON.parse(d.toString())));
    ws.once('error', reject);
  });
  ws.close();
  t.ok(hello.upstream === 0 || hello.upstream === 1, 'a WebSocket through nginx reaches an API upstream');

  // Upload bodies stream: the media upstream has the first chunk while the client still holds the rest.
  const chunks = await new Promise<{ status: number; seenBeforeEnd: number }>((resolve, reject) => {
    const req = http.request(`http://127.0.0.1:${mediaPort}/attachments`, { method: 'POST', headers: { 'content-type': 'application/octet-stream', 'transfer-encoding': 'chunked', 'x-session-token': 'uploader' }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, seenBeforeEnd }));
    });
    req.on('error', reject);
    let seenBeforeEnd = 0;
    req.write(Buffer.alloc(64 * 1024, 1));
    void until('the first chunk at the media upstream', () => media.some((m) => m.bodyChunks.length > 0), WAIT_MS)
      .then(() => {
        seenBeforeEnd = media.reduce((a, m) => a + m.bodyChunks.reduce((b, c) => b + c.length, 0), 0);
        req.end(Buffer.alloc(64 * 1024, 2));
      })
      .catch((err: unknown) => {
        req.destroy();
        reject(err);
      });
  });
  t.equal(chunks.status, 200);
  t.ok(chunks.seenBeforeEnd > 0, `the media upstream received ${chunks.seenBeforeEnd} bytes before the client finished (no request buffering)`);
  const tooBig = await via(`http://127.0.0.1:${mediaPort}/attachments`, { method: 'POST', headers: { 'content-length': String(64_000_000), 'x-session-token': 'uploader' } });
  t.same([tooBig.status, tooBig.body], [413, { type: 'PayloadTooLarge' }], 'a body announced beyond the largest upload: 413 JSON from nginx');

  // An upstream that is down: nginx answers JSON too, never its HTML page.
  const dead = nginxConfig({ listen: `127.0.0.1:${await freePort()}`, api: [`127.0.0.1:${await freePort()}`], mediaListen: `127.0.0.1:${await freePort()}`, media: [`127.0.0.1:${await freePort()}`] });
  const deadBase = `http://${/listen (127\.0\.0\.1:\d+);/.exec(dead)![1]}`;
  await runNginx(t, dead, `${deadBase}/`);
  const down = await via(`${deadBase}/users/@me`);
  t.same([down.status, down.body], [503, { type: 'InternalError' }], 'no API process: 503 {"type":"InternalError"}');
});

t.test('two API processes behind nginx: idempotency, the messaging bucket and delivery across processes', async (t) => {
  // Projector, worker and media in this process; two API processes as real child processes; all over one
  // SQLite store under DATA_DIR and one Redis prefix. The API processes trust nginx's address (TRUST_PROXY).
  const core = await startTestService(t, { ROLES: 'projector,worker,media', TRUST_PROXY: '127.0.0.1' });
  const env = {
    HOST: '127.0.0.1',
    API_PORT: '0',
    MEDIA_PORT: '0',
    DATA_DIR: core.dataDir,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_PREFIX: core.prefix,
    ROLES: 'api',
    TRUST_PROXY: '127.0.0.1',
    LOG_LEVEL: 'info',
  };
  const apis = await Promise.all([startRoleProcess(t, env), startRoleProcess(t, env)]);
  const hostPort = (url: string) => new URL(url).host;
  const [port, mediaPort] = [await freePort(), await freePort()];
  const conf = nginxConfig({ listen: `127.0.0.1:${port}`, api: apis.map((a) => hostPort(a.apiUrl!)), mediaListen: `127.0.0.1:${mediaPort}`, media: [hostPort(core.mediaUrl)] });
  const front = { apiUrl: `http://127.0.0.1:${port}`, mediaUrl: `http://127.0.0.1:${mediaPort}` };
  await runNginx(t, conf, `${front.apiUrl}/`);

  const owner = await signup(front);
  const sender = await signup(front);
  const reader = await signup(front);
  const server = await createServer(owner);
  await join(owner, server.general, sender, reader);

  await t.test('the same Idempotency-Key sent three times appends one message', async (t) => {
    const content = `once ${Date.now()}`;
    const answers: Array<[number, string | undefined]> = [];
    for (let i = 0; i < 3; i++) {
      const r = await owner.api.post(`/channels/${server.general}/messages`, { content }, { headers: { 'Idempotency-Key': `key-${content}` } });
      answers.push([r.status, r.body?.type]);
    }
    t.same(answers, [[200, undefined], [409, 'DuplicateNonce'], [409, 'DuplicateNonce']], 'the first send appends, the repeats are refused (one process holds the key)');
    const history = await owner.api.get(`/channels/${server.general}/messages?limit=100`);
    t.equal((history.body as Array<{ content: string }>).filter((m) => m.content === content).length, 1, 'one message in the history');
  });

  await t.test('the messaging bucket refuses the 11th send in 10 s', async (t) => {
    const statuses: number[] = [];
    const started = Date.now();
    for (let i = 0; i < 11; i++) statuses.push((await sender.api.post(`/channels/${server.general}/messages`, { content: `burst ${i}` })).status);
    const elapsed = Date.now() - started;
    t.ok(elapsed < 10_000, `the 11 sends took ${elapsed} ms (inside one window)`);
    t.same(statuses, [...Array(10).fill(200), 429], 'ten sends pass, the eleventh is refused');
  });

  await t.test('a Message reaches a socket connected to the other process', async (t) => {
    // One socket on each API process directly and one through nginx: whichever process takes the send, a
    // socket on the other one must get the Message.
    const sockets = [
      await connectReady({ apiUrl: apis[0]!.apiUrl! }, reader.token),
      await connectReady({ apiUrl: apis[1]!.apiUrl! }, reader.token),
      await connectReady(front, reader.token),
    ];
    t.teardown(() => sockets.forEach((s) => s.close()));
    const content = `across ${Date.now()}`;
    t.equal((await owner.api.post(`/channels/${server.general}/messages`, { content })).status, 200);
    for (const [i, s] of sockets.entries()) {
      const m = await s.waitFor((e) => e.type === 'Message' && e.content === content);
      t.equal(m.channel, server.general, `socket ${i} got the Message`);
    }
  });

  await t.test('uploads go through the media listen', async (t) => {
    const r = await upload(front, owner.token, 'attachments', await png(32, 32), { filename: 'a.png', contentType: 'image/png' });
    t.equal(r.status, 200, r.text);
    const sent = await owner.api.post(`/channels/${server.general}/messages`, { content: 'with a file', attachments: [r.body.id] });
    t.equal(sent.status, 200, sent.text);
    const file = await fetch(`${front.mediaUrl}/attachments/${r.body.id}`);
    t.equal(file.status, 200);
    t.equal((await file.arrayBuffer()).byteLength > 0, true, 'served back through nginx');
  });

});
