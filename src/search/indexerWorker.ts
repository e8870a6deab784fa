/**
 * The indexer thread's entry (see indexerThread.ts): its own event store connection and `SearchIndexer`.
 * Messages in: `wake` (new events in the log), `stop`. Messages out: `{ active }` when the lease is taken or
 * lost, `{ caughtUp: true }` once, then the thread exits after `stop`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openEventStore } from '../eventstore/open.ts';
import { SqliteEventStore } from '../eventstore/sqlite.ts';
import { createLogger } from '../log.ts';
import { SearchIndexer } from './indexer.ts';
import type { IndexerThreadData, IndexerThreadMessage } from './indexerThread.ts';

const data = workerData as IndexerThreadData;
const port = parentPort!;
const post = (m: IndexerThreadMessage) => port.postMessage(m);
const log = createLogger(data.logLevel, { thread: 'search-indexer' });
// Only message, channel and server events are indexed: none carries sealed personal fields, so the raw
// store is read (the personal-data boundary is not needed here).
const store = await openEventStore(data.store);
const indexer = new SearchIndexer({ store, file: data.file, log, leaseMs: data.leaseMs, holder: data.holder, onActive: (active) => post({ active }) });
indexer.start();
void indexer.caughtUp.then(() => post({ caughtUp: true }));
port.on('message', (m: unknown) => {
  if (m === 'wake') {
    if (store instanceof SqliteEventStore) store.wake();
  } else if (m === 'stop') {
    void (async () => {
      await indexer.stop();
      await store.close();
      port.close();
    })();
  }
});
