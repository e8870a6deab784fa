/**
 * A server process for the HTTP benchmarks, so the server under test does not share its event loop with
 * autocannon. `node --import tsx bench/serve.ts service` starts the service from the environment (plus, with
 * BENCH_UNLIMITED=1, a second API app on the same deps with the rate limiter off: the same route without
 * limits, in the same process); `… bare` starts a bare koa app (the ceiling); `… node` bare node:http (the lower ceiling); `… floor` the floor of a durable, projected send
 * (bare koa plus the SQLite group commit and the projection's Redis writes); `… ws` a raw `ws` broadcaster
 * (the gateway fan-out's ceiling). Prints one line
 * `BENCH {json}` with the URLs, answers the IPC message `memory` with its memory, stops on SIGTERM.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { Redis as IORedis } from 'ioredis';
import Koa from 'koa';
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import { createServer as createHttpServer, type Server } from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';
import { loadConfig } from '../src/config.ts';
import { createApiApp } from '../src/http/app.ts';
import { API_ROUTES } from '../src/http/routes/index.ts';
import { newId } from '../src/ids.ts';
import { createLogger } from '../src/log.ts';
import { RateLimiter } from '../src/ratelimit/limiter.ts';
import { startService } from '../src/service.ts';

function listen(app: Koa): Promise<Server> {
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => resolve(server));
  });
}
const urlOf = (s: Server) => `http://127.0.0.1:${(s.address() as { port: number }).port}`;

const mode = process.argv[2];
let stop: () => Promise<void>;
if (mode === 'service') {
  const config = loadConfig();
  const service = await startService(config, { log: createLogger(config.logLevel) });
  const out: Record<string, string> = { apiUrl: service.apiUrl };
  let unlimited: Server | undefined;
  if (process.env.BENCH_UNLIMITED === '1') {
    unlimited = await listen(createApiApp({ ...service.deps, limiter: new RateLimiter({ enabled: false }) }, API_ROUTES));
    out.unlimitedUrl = urlOf(unlimited);
  }
  console.log(`BENCH ${JSON.stringify(out)}`);
  stop = async () => {
    unlimited?.close();
    await service.stop();
  };
} else if (mode === 'bare') {
  // The ceiling: koa with the same JSON body parsing, a JSON POST answered with a message-shaped echo, and a
  // GET answering a pre-serialised page (set by PUT /page).
  const app = new Koa();
  const router = new Router();
  let page = '[]';
  router.post('/channels/:channel_id/messages', (ctx) => {
    const body = ctx.request.body as Record<string, unknown>;
    ctx.body = { _id: newId(), nonce: newId(), channel: ctx.params.channel_id, author: 'bare', ...body };
  });
  router.put('/page', (ctx) => {
    page = JSON.stringify(ctx.request.body);
    ctx.status = 204;
  });
  router.get('/channels/:channel_id/messages', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = page;
  });
  app.use(bodyParser({ enableTypes: ['json'], detectJSON: () => true, jsonLimit: '1mb' }));
  app.use(router.routes());
  const server = await listen(app);
  console.log(`BENCH ${JSON.stringify({ url: urlOf(server) })}`);
  stop = () => new Promise((r) => server.close(() => r()));
} else if (mode === 'node') {
  // The lower ceiling: bare node:http, no framework. The same JSON POST (read, parsed and echoed as a
  // message) and GET of a pre-serialised page (set by PUT /page) as the koa ceiling.
  let page = '[]';
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      const m = /^\/channels\/([^/]+)\/messages$/.exec(path);
      if (req.method === 'PUT' && path === '/page') {
        page = JSON.stringify(JSON.parse(Buffer.concat(chunks).toString()));
        return void res.writeHead(204).end();
      }
      if (m && req.method === 'GET') {
        return void res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(page) }).end(page);
      }
      if (m && req.method === 'POST') {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>;
        const out = JSON.stringify({ _id: newId(), nonce: newId(), channel: m[1], author: 'bare', ...body });
        return void res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(out) }).end(out);
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  console.log(`BENCH ${JSON.stringify({ url: urlOf(server) })}`);
  stop = () => new Promise((r) => server.close(() => r()));
} else if (mode === 'floor') {
  // The floor of a durable, projected send: the bare koa route plus only what the guarantees cost. The body
  // becomes a message; the appends of one event-loop turn are written by one SQLite transaction (WAL,
  // synchronous=FULL: one fsync); then that group's projection is written to Redis in one MULTI (the message,
  // the channel's message index, the client event on a stream, the checkpoint), and each send is answered
  // once both are done. No session, permission, rate limit, idempotency, validation or middleware: what the
  // real send does beyond this floor is its own overhead.
  const dir = fs.mkdtempSync(path.join(process.env.FLOOR_DIR ?? os.tmpdir(), 'floor-'));
  const db = new Database(path.join(dir, 'events.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE events (position INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, stream TEXT NOT NULL, revision INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, UNIQUE (stream, revision))');
  const insert = db.prepare('INSERT INTO events (id, stream, revision, type, data, metadata) VALUES (?, ?, ?, ?, ?, ?)');
  const redis = new IORedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  const prefix = `${process.env.REDIS_PREFIX ?? 'bench:floor:'}`;
  type Queued = { message: Record<string, unknown>; done: (err?: unknown) => void };
  let queue: Queued[] = [];
  const flush = () => {
    const group = queue;
    queue = [];
    let position = 0;
    try {
      db.transaction(() => {
        for (const q of group) {
          const info = insert.run(String(q.message._id), `message-${String(q.message._id)}`, 0, 'MessageSent', JSON.stringify({ message: q.message }), JSON.stringify({ at: Date.now() }));
          position = Number(info.lastInsertRowid);
        }
      }).immediate();
    } catch (err) {
      for (const q of group) q.done(err);
      return;
    }
    const m = redis.multi();
    for (const q of group) {
      const channel = String(q.message.channel);
      const text = JSON.stringify(q.message);
      m.hset(`${prefix}messages:${channel}`, String(q.message._id), text);
      m.zadd(`${prefix}ids:${channel}`, 0, String(q.message._id));
      m.xadd(`${prefix}events`, 'MAXLEN', '~', '10000', '*', 'e', `{"type":"Message",${text.slice(1)}`);
    }
    m.set(`${prefix}checkpoint`, String(position));
    m.exec().then(() => group.forEach((q) => q.done()), (err: unknown) => group.forEach((q) => q.done(err)));
  };
  const app = new Koa();
  const router = new Router();
  router.post('/channels/:channel_id/messages', async (ctx) => {
    const body = ctx.request.body as Record<string, unknown>;
    const message = { _id: newId(), channel: ctx.params.channel_id, author: 'floor', ...body };
    await new Promise<void>((resolve, reject) => {
      if (queue.length === 0) setImmediate(flush);
      queue.push({ message, done: (err) => (err ? reject(err) : resolve()) });
    });
    ctx.body = message;
  });
  app.use(bodyParser({ enableTypes: ['json'], detectJSON: () => true, jsonLimit: '1mb' }));
  app.use(router.routes());
  const server = await listen(app);
  console.log(`BENCH ${JSON.stringify({ url: urlOf(server) })}`);
  stop = async () => {
    await new Promise((r) => server.close(r));
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  };
} else if (mode === 'ws') {
  // The gateway's ceilings: a raw `ws` server. POST /broadcast with a JSON array of frame texts sends each to
  // every connected socket (one payload to all, then the next, yielding to I/O between payloads); PUT /hello
  // with a frame text sends that frame to each socket as it connects (the Ready ceiling).
  const sockets = new Set<WebSocket>();
  let hello: string | undefined;
  const server = createHttpServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      if (req.url === '/hello') {
        hello = body;
        return void res.writeHead(204).end();
      }
      const frames = JSON.parse(body) as string[];
      res.writeHead(204).end();
      let i = 0;
      const next = () => {
        if (i >= frames.length) return;
        const text = frames[i++]!;
        for (const ws of sockets) ws.send(text);
        setImmediate(next);
      };
      next();
    });
  });
  new WebSocketServer({ server, perMessageDeflate: false }).on('connection', (ws) => {
    sockets.add(ws);
    ws.once('close', () => sockets.delete(ws));
    if (hello !== undefined) ws.send(hello);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  console.log(`BENCH ${JSON.stringify({ url: urlOf(server) })}`);
  stop = () => new Promise((r) => server.close(() => r()));
} else {
  console.error('usage: bench/serve.ts service|bare|node|floor|ws');
  process.exit(2);
}
/**
 * Peak RSS of this process: VmHWM, the high-water mark of its own address space. Not getrusage's maxrss,
 * which Linux carries over from the parent through fork and exec (every server of a big bench runner read
 * as the runner's own peak). Elsewhere, the RSS now.
 */
function peakRss(): number {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // not Linux
  }
  return process.memoryUsage().rss;
}

// ServerProcess.memory() asks over IPC; a full GC first when node runs with --expose-gc.
process.on('message', (m) => {
  if (m !== 'memory') return;
  (globalThis as { gc?: () => void }).gc?.();
  process.send?.({ memory: { ...process.memoryUsage(), maxRss: peakRss() } });
});
process.on('SIGTERM', () => {
  void stop().then(() => process.exit(0));
});
