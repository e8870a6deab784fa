/**
 * `ack`: channel acks/s and p50/p99 at 50 connections through the real API (session lookup, channel access,
 * the message-in-channel check, append with expected revision `any`, the unreads projection's one Lua
 * script, read-your-writes), next to message sends in the same run — the bar: an ack costs no more
 * than a send. Every ack changes the caller's read state (it alternates between the two latest messages of
 * the channel, both mentioning every user), so each one appends and projects; none is a no-op.
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { median, percentile, repeat, type Bench } from './lib.ts';
import { assertClean, call, measure, setupServer, signupUser, startServer, type BenchUser } from './http.ts';
import { SEND_BODY } from './send.ts';
import { deletePrefix } from '../test/helpers/service.ts';

const bench: Bench = {
  name: 'ack',
  description: 'PUT /channels/:id/ack/:message at 50 connections vs POST /channels/:id/messages in the same run',
  async run(ctx) {
    const prefix = `bench:ack:${randomBytes(4).toString('hex')}:`;
    const svc = await startServer('service', {
      ROLES: 'api,projector',
      RATE_LIMITS: 'off',
      API_PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: path.join(ctx.tmpDir, 'data'),
      REDIS_URL: ctx.redisUrl,
      REDIS_PREFIX: prefix,
    });
    try {
      const api = svc.urls.apiUrl!;
      const users: BenchUser[] = [];
      for (let i = 0; i < 10; i++) users.push(await signupUser(api));
      const { channels } = await setupServer(api, users[0]!, 20, users.slice(1));
      const everyone = users.map((u) => `<@${u.userId}>`).join(' ');
      // Two messages per channel, each mentioning every user: the acks alternate between them.
      const targets = new Map<string, [string, string]>();
      for (const c of channels) {
        const a = await call(`${api}/channels/${c}/messages`, 'POST', users[0]!.token, { content: `first ${everyone}` });
        const b = await call(`${api}/channels/${c}/messages`, 'POST', users[0]!.token, { content: `second ${everyone}` });
        targets.set(c, [a._id, b._id]);
      }
      let s = 0;
      const nextSend = () => {
        const u = users[s % users.length]!;
        const c = channels[Math.floor(s / users.length) % channels.length]!;
        s++;
        return { path: `/channels/${c}/messages`, headers: { 'X-Session-Token': u.token, 'Content-Type': 'application/json' }, body: SEND_BODY };
      };
      let a = 0;
      const nextAck = () => {
        const u = users[a % users.length]!;
        const pair = Math.floor(a / users.length);
        const c = channels[pair % channels.length]!;
        // Each (user, channel) alternates between the two messages on each of its turns: every ack appends.
        const m = targets.get(c)![Math.floor(pair / channels.length) % 2]!;
        a++;
        return { path: `/channels/${c}/ack/${m}`, headers: { 'X-Session-Token': u.token } };
      };
      const duration = ctx.quick ? 4 : 8;
      await measure({ url: api, method: 'PUT', next: nextAck, duration: 2 });
      await measure({ url: api, method: 'POST', next: nextSend, duration: 2 });
      const runs = await repeat(ctx.repeats, async () => ({
        ack: assertClean('ack', await measure({ url: api, method: 'PUT', next: nextAck, duration })),
        send: assertClean('send', await measure({ url: api, method: 'POST', next: nextSend, duration })),
      }));
      const rps = median(runs.map((r) => r.ack.rps));
      const ceiling = median(runs.map((r) => r.send.rps));
      ctx.log(`ack: ${runs.map((r) => Math.round(r.ack.rps)).join(', ')} req/s; send: ${runs.map((r) => Math.round(r.send.rps)).join(', ')} req/s`);
      return [
        {
          name: 'ack',
          figure: 'channel acks/s, 50 connections',
          median: rps,
          unit: 'req/s',
          p50: median(runs.map((r) => r.ack.p50)),
          p99: median(runs.map((r) => r.ack.p99)),
          ceiling,
          ceilingLabel: `message sends in the same run (p50/p99 ${percentile(runs.map((r) => r.send.p50), 50)}/${percentile(runs.map((r) => r.send.p99), 50)} ms)`,
          ratio: rps / ceiling,
          notes: 'RATE_LIMITS=off; 10 users × 20 channels; every ack appends (fsync, group commit) and answers after its projection; ratio ≥ 1 means an ack costs no more than a send',
        },
      ];
    } finally {
      await svc.stop();
      await deletePrefix(ctx.redisUrl, prefix);
    }
  },
};
export default bench;
