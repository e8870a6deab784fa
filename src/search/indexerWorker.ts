/**
 * The indexer thread's entry (see indexerThread.ts): its own event store connection and `SearchIndexer`.
 * Messages in: `wake` (new events in the log), `stop`. Messages out: `{ active }` when the lease is taken or
 * lost, `{ caughtUp: true }` once, then the thread exits after `stop`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openEventStore } from '../eventstore/open.ts';
import { SqliteEventStore } from '../eventstore/sqlite.ts';
import { openConfiguredKeyStore } from '../personal/keyStore.ts';
import { PersonalDataStore } from '../personal/store.ts';
import { createLogger } from '../log.ts';
import { SearchIndexer } from './indexer.ts';
import type { IndexerThreadData, IndexerThreadMessage } from './indexerThread.ts';

const data = workerData as IndexerThreadData;
const port = parentPort!;
const post = (m: IndexerThreadMessage) => port.postMessage(m);
const log = createLogger(data.logLevel, { thread: 'search-indexer' });
// Message content is sealed under its channel's time bucket (retention): read through the boundary (which
// leaves repeating key destructions to the projector: two threads repeating one would record it twice).
const store = new PersonalDataStore(await openEventStore(data.store), await openConfiguredKeyStore(data.keys ?? { dataDir: data.store.dataDir, eventStoreUrl: data.store.eventStoreUrl, keyStoreUrl: undefined }), { repeatErasures: false });
const indexer = new SearchIndexer({ store, file: data.file, log, leaseMs: data.leaseMs, holder: data.holder, onActive: (active) => post({ active }) });
indexer.start();
void indexer.caughtUp.then(() => post({ caughtUp: true }));
port.on('message', (m: unknown) => {
  if (m === 'wake') {
    if (store.inner instanceof SqliteEventStore) store.inner.wake();
  } else if (m === 'stop') {
    void (async () => {
      await indexer.stop();
      await store.close();
      port.close();
    })();
  }
});
