/**
 * `ready`: time from opening a gateway socket to its Ready frame, for a user in 100 servers of 200 channels
 * each (the instance's default limits, USER_SERVER_LIMIT and SERVER_CHANNEL_LIMIT: 20,000 channels), one
 * connection at a time. The account is made through the API; the servers and channels are the events the
 * routes decide, appended to the SQLite log in bulk, and the read models are built by `npm run rebuild`
 * (as bench/seeded.ts does for the history). The ceiling, in the same run: a raw `ws` server that sends the very same Ready
 * text (the same bytes) to each socket as it connects — the connection, the WebSocket framing and the
 * client's receipt of that many bytes, without reading or presenting anything.
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fmtMs, latencies, median, repeat, type Bench } from './lib.ts';
import { signupUser, startServer, waitServing, type BenchUser } from './http.ts';
import { runRebuild } from './seeded.ts';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import type { StreamWrite } from '../src/eventstore/port.ts';
import { decideCreateServer } from '../src/domain/server/createServer.ts';
import { toNewEvent } from '../src/domain/events.ts';
import { serverStream } from '../src/http/command.ts';
import { newId } from '../src/ids.ts';
import { closeSockets, gatewayUrl, openSocket } from './gateway.ts';
import { deletePrefix } from '../test/helpers/service.ts';

const SERVERS = 100;
const CHANNELS = 200;

/**
 * Appends the user's servers as `POST /servers/create` and `POST /servers/:id/channels` decide them: per
 * server, its stream with ServerCreated ("General"), the owner's MemberJoined and 199 ChannelCreated.
 */
async function seedServers(file: string, owner: string): Promise<void> {
  const store = new SqliteEventStore(file);
  try {
    const now = new Date();
    const writes: StreamWrite[] = [];
    for (let i = 0; i < SERVERS; i++) {
      const serverId = newId();
      const meta = { actor: owner, requestId: 'bench-seed', at: now.toISOString(), scope: serverId };
      const events = decideCreateServer({ serverId, channelId: newId(), ownerId: owner, name: `Bench ${i}` }, null, { now });
      for (let c = 1; c < CHANNELS; c++) {
        events.push({ type: 'ChannelCreated', data: { channel: { channel_type: 'TextChannel', _id: newId(), server: serverId, name: `channel-${c}` } } });
      }
      writes.push({ stream: serverStream(serverId), expected: 'no_stream', events: events.map((e) => toNewEvent(e, meta)) });
    }
    await store.appendMany(writes);
  } finally {
    await store.close();
  }
}

const bench: Bench = {
  name: 'ready',
  description: 'Ready for a user in 100 servers × 200 channels vs a raw ws server sending the same Ready text',
  async run(ctx) {
    const dataDir = path.join(ctx.tmpDir, 'data');
    const prefix = `bench:ready:${randomBytes(4).toString('hex')}:`;
    const env = { ROLES: 'api,projector', RATE_LIMITS: 'off', API_PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, REDIS_URL: ctx.redisUrl, REDIS_PREFIX: prefix };
    ctx.atEnd(() => deletePrefix(ctx.redisUrl, prefix));
    // The account through the API; the servers and channels as the routes decide them, appended in bulk.
    const setup = await startServer('service', { ...env, REDIS_PREFIX: `${prefix}setup:` });
    let user: BenchUser;
    try {
      user = await signupUser(setup.urls.apiUrl!);
    } finally {
      await setup.stop();
      await deletePrefix(ctx.redisUrl, `${prefix}setup:`);
    }
    const t0 = performance.now();
    await seedServers(path.join(dataDir, 'events.sqlite'), user.userId);
    const rebuild = await runRebuild(dataDir, ctx.redisUrl, prefix);
    ctx.log(`${SERVERS} servers × ${CHANNELS} channels appended and rebuilt (${rebuild.events.toLocaleString('en-US')} events) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const svc = await startServer('service', env);
    const raw = await startServer('ws');
    try {
      const api = svc.urls.apiUrl!;
      await waitServing(api, user.token);
      const url = gatewayUrl(api, user.token);
      const once = async (target: string, marker: string | undefined) => {
        const s = await openSocket(target, marker, '\u0000');
        await closeSockets([s]);
        return s;
      };
      // The Ready text the ceiling sends, checked for its size.
      const text = (await once(url, '"type":"Ready"')).readyText;
      const ready = JSON.parse(text) as { servers: unknown[]; channels: unknown[] };
      if (ready.servers.length !== SERVERS || ready.channels.length < SERVERS * CHANNELS) {
        throw new Error(`Ready lists ${ready.servers.length} servers and ${ready.channels.length} channels`);
      }
      await fetch(`${raw.urls.url}/hello`, { method: 'PUT', body: text });
      const rawUrl = raw.urls.url!.replace(/^http/, 'ws');
      const n = ctx.quick ? 10 : 25;
      const runs = await repeat(ctx.repeats, async () => ({
        ready: await latencies(n, () => once(url, '"type":"Ready"')),
        ceiling: await latencies(n, () => once(rawUrl, '"type":"Ready"')),
      }));
      const p50 = median(runs.map((r) => r.ready.p50));
      const p99 = median(runs.map((r) => r.ready.p99));
      const c50 = median(runs.map((r) => r.ceiling.p50));
      const c99 = median(runs.map((r) => r.ceiling.p99));
      ctx.log(`Ready p50/p99 ${runs.map((r) => `${fmtMs(r.ready.p50)}/${fmtMs(r.ready.p99)}`).join(', ')}; raw ws ${runs.map((r) => `${fmtMs(r.ceiling.p50)}/${fmtMs(r.ceiling.p99)}`).join(', ')}`);
      const mb = (Buffer.byteLength(text) / 2 ** 20).toFixed(2);
      return [
        {
          name: 'ready-100x200',
          figure: `time to Ready, user in ${SERVERS} servers × ${CHANNELS} channels (${mb} MB frame)`,
          median: p50,
          unit: 'ms',
          p50,
          p99,
          ceiling: c50,
          ceilingLabel: `raw ws sending the same Ready text on connect (p50/p99 ${fmtMs(c50)}/${fmtMs(c99)})`,
          ratio: c50 / p50,
          notes: `RATE_LIMITS=off; ${ready.channels.length.toLocaleString('en-US')} channels in the frame, default Ready fields; from opening the socket (?token=) to the whole Ready frame received, one connection at a time, ${n} per run; the ceiling is the connection and the transfer of those bytes alone`,
        },
      ];
    } finally {
      await raw.stop();
      await svc.stop();
    }
  },
};
export default bench;
