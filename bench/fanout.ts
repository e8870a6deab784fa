/**
 * `fanout`: messages/s delivered by the events gateway to 1,000 real WebSocket clients subscribed to one
 * channel (the members' sockets of one server; every socket authenticated and past its Ready), next to a raw
 * `ws` server broadcasting the very same frame texts to 1,000 sockets in the same run (the ceiling: the
 * WebSocket writes alone, without the log, the projection, the hub's routing and permission checks). The
 * figure is end to end: from the first of the sends (HTTP, 16 in flight) to the last frame on the last socket.
 * The clients run in the bench process in both cases and only look for a marker in each frame's text.
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { inFlight, median, repeat, type Bench } from './lib.ts';
import { call, setupServer, signupUser, startServer, type BenchUser } from './http.ts';
import { allCounted, closeSockets, gatewayUrl, openSockets, type BenchSocket } from './gateway.ts';
import { deletePrefix } from '../test/helpers/service.ts';

const SOCKETS = 1_000;
const MARKER = 'fanout-bench';

/** Zeroes the sockets' counters. */
function reset(sockets: BenchSocket[]): void {
  for (const s of sockets) s.counted = 0;
}

const bench: Bench = {
  name: 'fanout',
  description: 'messages/s delivered by the gateway to 1,000 sockets on one channel vs raw ws broadcasting the same frames',
  async run(ctx) {
    const prefix = `bench:fanout:${randomBytes(4).toString('hex')}:`;
    const users = ctx.quick ? 50 : 100;
    const svc = await startServer('service', {
      ROLES: 'api,projector',
      RATE_LIMITS: 'off',
      API_PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: path.join(ctx.tmpDir, 'data'),
      REDIS_URL: ctx.redisUrl,
      REDIS_PREFIX: prefix,
      GATEWAY_MAX_SOCKETS_PER_USER: String(SOCKETS),
      GATEWAY_MAX_SOCKETS_PER_ADDRESS: String(4 * SOCKETS),
    });
    const raw = await startServer('ws');
    let sockets: BenchSocket[] = [];
    let rawSockets: BenchSocket[] = [];
    try {
      const api = svc.urls.apiUrl!;
      const members: BenchUser[] = [];
      for (let i = 0; i < users; i += 10) members.push(...(await Promise.all(Array.from({ length: Math.min(10, users - i) }, () => signupUser(api)))));
      const owner = members[0]!;
      const { channels } = await setupServer(api, owner, 1, members.slice(1));
      const channel = channels[0]!;
      sockets = await openSockets(SOCKETS, (i) => gatewayUrl(api, members[i % users]!.token), '"type":"Ready"', MARKER);
      rawSockets = await openSockets(SOCKETS, () => raw.urls.url!.replace(/^http/, 'ws'), undefined, MARKER);
      ctx.log(`${SOCKETS} gateway sockets of ${users} members past Ready; ${SOCKETS} raw ws sockets`);

      const count = ctx.quick ? 100 : 200;
      let n = 0;
      const send = () => call(`${api}/channels/${channel}/messages`, 'POST', owner.token, { content: `${MARKER} message ${++n}: a chat line of a typical length, sent to everyone.` });
      // Warm-up, and the frame texts the ceiling sends (as socket 0 received them).
      const frames: string[] = [];
      sockets[0]!.ws.on('message', (d: Buffer) => {
        const text = d.toString();
        if (text.includes(MARKER) && frames.length < count) frames.push(text);
      });
      await inFlight(Array.from({ length: count }), 16, send);
      await allCounted(sockets, count);
      if (frames.length !== count || !frames.every((f) => f.startsWith('{"type":"Message"'))) throw new Error(`socket 0 kept ${frames.length} frames, not ${count} Message frames`);

      const runs = await repeat(ctx.repeats, async () => {
        reset(sockets);
        const t0 = performance.now();
        await inFlight(Array.from({ length: count }), 16, send);
        const sent = performance.now();
        const gateway = (count * SOCKETS) / (((await allCounted(sockets, count)) - t0) / 1000);
        reset(rawSockets);
        const r0 = performance.now();
        await fetch(`${raw.urls.url}/broadcast`, { method: 'POST', body: JSON.stringify(frames) });
        const ceiling = (count * SOCKETS) / (((await allCounted(rawSockets, count)) - r0) / 1000);
        return { gateway, ceiling, sendRate: count / ((sent - t0) / 1000) };
      });
      const rate = median(runs.map((r) => r.gateway));
      const ceiling = median(runs.map((r) => r.ceiling));
      const f = (x: number) => Math.round(x).toLocaleString('en-US');
      ctx.log(`gateway ${runs.map((r) => f(r.gateway)).join(', ')} frames/s (sends ${runs.map((r) => f(r.sendRate)).join(', ')}/s); raw ws ${runs.map((r) => f(r.ceiling)).join(', ')} frames/s`);
      return [
        {
          name: 'fanout-1000',
          figure: `messages delivered/s, 1,000 sockets on one channel (${count} messages × 1,000)`,
          median: rate,
          unit: 'msg/s',
          ceiling,
          ceilingLabel: 'raw ws broadcasting the same frames to 1,000 sockets',
          ratio: rate / ceiling,
          notes: `RATE_LIMITS=off; ${users} members × ${SOCKETS / users} sockets each, every one authenticated and past Ready; a run is ${count} sends (HTTP, 16 in flight, median ${f(median(runs.map((r) => r.sendRate)))} sends/s) to the last frame on the last socket; the ceiling sends socket 0's ${count} frame texts (about ${frames[0]!.length} bytes each) to every raw socket, one payload at a time; clients in the bench process in both`,
        },
      ];
    } finally {
      await closeSockets([...sockets, ...rawSockets]);
      await raw.stop();
      await svc.stop();
      await deletePrefix(ctx.redisUrl, prefix);
    }
  },
};
export default bench;
