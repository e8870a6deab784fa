/**
 * The fence (src/readmodel/reader.ts): before a request reads the fact cache, the cache is brought up to every
 * partition's checkpoint as Redis holds it after the request began. The requests that ask during one turn of
 * the event loop share one read of the checkpoints, sent at the end of that turn; a request that asks once
 * that read was sent must not be answered by it (it could miss a write acknowledged in between), it waits for
 * the next read.
 */
import t from 'tap';

import { startTestService } from './helpers/service.ts';

t.test('one read of the checkpoints per turn; a later request waits for the next read', async (t) => {
  const s = await startTestService(t, { PROJECTOR_PARTITIONS: '2' });
  const cache = s.readModels.factCache;
  if (!cache) {
    t.pass('no fact cache on this Redis (a cluster): the fence has nothing to do');
    return;
  }
  const redis = s.readModels.redis;
  const keys = [0, 1].map((i) => s.readModels.partition(i).checkpoint);
  let reads = 0;
  const mget = redis.mget.bind(redis);
  (redis as unknown as { mget: (...k: string[]) => Promise<Array<string | null>> }).mget = (...k: string[]) => {
    if (k.length === 2 && k[0] === keys[0] && k[1] === keys[1]) reads++;
    return mget(...k);
  };

  // Ten requests in one turn: one read.
  await Promise.all(Array.from({ length: 10 }, () => s.readModels.fence()));
  t.equal(reads, 1, 'ten fences in one turn read the checkpoints once');
  const before = cache.position(0)!;

  // The first request's read is sent at the end of its turn. A write's checkpoint lands after it was sent, and a
  // second request asks after that: the second must see the checkpoint, the first cannot have.
  const ahead = before + 1000n;
  let second: Promise<void> | undefined;
  const first = s.readModels.fence();
  setImmediate(() => {
    // The fence's own setImmediate ran first (they run in order): its read is on the wire, ahead of this SET
    // on the same connection.
    void redis.set(keys[0]!, String(ahead));
    second = s.readModels.fence();
  });
  await first;
  t.equal(cache.position(0), before, 'the first request read the checkpoint as it was');
  await until(() => second !== undefined);
  await second;
  t.equal(reads, 3, 'the second request was not answered by the first read');
  t.equal(cache.position(0), ahead, 'the second request brought the cache up to the new checkpoint');
});

async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setImmediate(r));
}
