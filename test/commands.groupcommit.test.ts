/**
 * The command executor announces each command's append to the store while it decides (`expectAppend`), so the
 * SQLite store's group commit holds a group for the commands still deciding (src/eventstore/sqlite.ts): commands
 * whose decisions end in different turns of the event loop share one commit, and a command that fails or decides
 * nothing gives its announcement back (or every later append would wait for the deadline). The store's hold is a
 * minute here, so a leaked announcement would time the test out instead of passing after a short wait.
 */
import path from 'node:path';
import t from 'tap';
import { CommandExecutor } from '../src/commands.ts';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import type { ReadModels } from '../src/readmodel/reader.ts';
import { tempDir } from './helpers/service.ts';

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};
const meta = { actor: null, requestId: 'r' };
const acked = (n: number) => ({ type: 'ChannelAcked' as const, data: { channelId: `c${n}`, messageId: `m${n}` } });

t.test('commands deciding at once share a commit; failed and empty decisions release the group', async (t) => {
  const store = new SqliteEventStore(path.join(tempDir(t), 'e.sqlite'), { commitDelayMs: 60_000 });
  t.teardown(() => store.close());
  // The executor waits for the projection of what it appended; no projector runs here.
  const readModels = { waitFor: async () => {}, waitForAll: async () => {} } as unknown as ReadModels;
  const executor = new CommandExecutor({ store, readModels });
  const run = (i: number, wait: number) =>
    executor.execute(meta, [`s-${i}`], async () => {
      await turns(wait);
      return { writes: [{ stream: `s-${i}`, scope: 'x', expected: 'no_stream' as const, events: [acked(i)] }], result: i };
    });

  const c0 = store.stats().commits;
  const results = await Promise.all(Array.from({ length: 10 }, (_, i) => run(i, i * 2)));
  t.same(results.map((r) => r.result), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  t.equal(store.stats().commits, c0 + 1, 'ten commands whose decisions ended over 18 turns: one commit');
  t.same(new Set(results.map((r) => r.appended[0]!.position)).size, 10, 'each its own position');

  const failed = executor.execute(meta, ['f'], async () => {
    await turns(1);
    throw new Error('refused');
  });
  const empty = executor.execute(meta, ['e'], async () => ({ writes: [], result: 'nothing' }));
  const after = run(10, 3);
  await t.rejects(failed, /refused/);
  t.same((await empty).appended, [], 'a decision without events appends nothing');
  t.equal((await after).result, 10, 'the next command is not held by the failed or the empty one');
  t.equal(store.stats().commits, c0 + 2);
});
