/**
 * `npm run rebuild:search`: rebuilds this machine's message search index (`DATA_DIR/search.sqlite`) from
 * position 0. It empties the index and its checkpoint in one transaction; an indexer running on this machine
 * (projector role) then replays the log by itself, and searches wait for it. With no indexer running, this
 * command takes the index's lease and replays the log itself, with a progress bar.
 */
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { ConfigError, loadConfig } from '../config.ts';
import { upcast } from '../domain/events.ts';
import { openReadableEventStore } from '../personal/open.ts';
import { SearchIndex } from '../search/index.ts';
import { progressBar } from './progress.ts';

try {
  const config = loadConfig();
  const file = path.join(config.dataDir, 'search.sqlite');
  const index = new SearchIndex(file);
  const me = `rebuild-${randomUUID()}`;
  const leaseMs = 60_000;
  if (!index.lease(me, Date.now(), leaseMs)) {
    index.reset();
    console.log(`emptied ${file}; the running search indexer replays the log from zero`);
    index.close();
  } else {
    index.reset();
    const store = await openReadableEventStore(config);
    let count = 0;
    for await (const _ of store.readAll()) count++;
    const bar = progressBar('search index', count);
    const started = Date.now();
    let checkpoint: bigint | undefined;
    let done = 0;
    let batch = [];
    for await (const e of store.readAll()) {
      batch.push(e);
      if (batch.length === 1000) {
        checkpoint = index.applyBatch(batch, checkpoint, upcast);
        done += batch.length;
        batch = [];
        bar.update(done);
        index.lease(me, Date.now(), leaseMs);
      }
    }
    if (batch.length) checkpoint = index.applyBatch(batch, checkpoint, upcast);
    bar.update(count);
    bar.stop();
    index.release(me);
    index.close();
    await store.close();
    const s = (Date.now() - started) / 1000;
    console.log(`rebuilt the search index from ${count} events in ${s.toFixed(1)} s, ${Math.round(count / Math.max(0.001, s))} events/s`);
  }
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(1);
  }
  throw err;
}
