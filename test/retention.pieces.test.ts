/**
 * The retention sweep's channel set in pieces (READ_MODEL_LAYOUT 6, docs/ARCHITECTURE.md "Redis Cluster"): a
 * send adds its channel to the piece of the channel's shard (`retention:channels:<s>`), so a send's batch stays
 * out of the generation's main slot, and the sweep walks the union of the pieces (`sentChannels`).
 */
import t from 'tap';
import { sentChannels } from '../src/compliance/retention.ts';
import { messageChannelPieces, rm, shardOf } from '../src/readmodel/keys.ts';
import { signup } from './helpers/http.ts';
import { startTestService } from './helpers/service.ts';
import { serverWithChannels } from './helpers/clusterShards.ts';

t.test('each send lands in its shard\'s piece; the sweep reads every piece', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off', RETENTION_SWEEP_INTERVAL_MS: '0' });
  const owner = await signup(s);
  const srv = await serverWithChannels(owner, 12);
  for (const c of srv.channels) {
    const r = await owner.api.post(`/channels/${c}/messages`, { content: `in ${c}` });
    t.equal(r.status, 200);
  }
  // Writes are read-your-writes: each send's batch is committed by now.
  const pieces = await Promise.all(messageChannelPieces().map((k) => s.readModels.smembers(k)));
  const used = pieces.map((p, i) => [i, p] as const).filter(([, p]) => p.length > 0);
  t.ok(used.length > 1, `the 12 channels are in ${used.length} pieces`);
  for (const [i, p] of used) t.ok(p.every((c) => shardOf(c) === i), `piece ${i} holds only channels of shard ${i}`);
  t.same((await sentChannels(s.readModels)).sort(), [...srv.channels].sort(), 'the sweep sees every channel a message was sent in');
  t.same(await s.readModels.smembers(rm.messageChannels(shardOf(srv.channels[0]!))), pieces[shardOf(srv.channels[0]!)], 'rm.messageChannels(s) is piece s');
});
