/**
 * Opens the event store the configuration names: PostgreSQL (`postgres://…`), KurrentDB (any other URL) or
 * the embedded SQLite file under `DATA_DIR`. Used by the composition root, the CLIs and the search indexer's
 * thread (each opens its own connection).
 */
import path from 'node:path';
import type { Config } from '../config.ts';
import type { EventStore } from './port.ts';
import { SqliteEventStore } from './sqlite.ts';

/** Where the events are: the part of the configuration `openEventStore` reads. */
export type StoreLocation = Pick<Config, 'eventStoreUrl' | 'dataDir'> & Partial<Pick<Config, 'sqliteCommitDelayMs' | 'pgTimeouts'>>;

export async function openEventStore(config: StoreLocation, onCommit?: (position: bigint) => void): Promise<EventStore> {
  if (config.eventStoreUrl && /^postgres(ql)?:\/\//.test(config.eventStoreUrl)) {
    const { openPostgresEventStore } = await import('./postgres.ts');
    return openPostgresEventStore(config.eventStoreUrl, config.pgTimeouts ? { timeouts: config.pgTimeouts } : {});
  }
  if (config.eventStoreUrl) {
    const { openKurrentEventStore } = await import('./kurrent.ts');
    return openKurrentEventStore(config.eventStoreUrl);
  }
  return new SqliteEventStore(path.join(config.dataDir, 'events.sqlite'), {
    ...(onCommit ? { onCommit } : {}),
    ...(config.sqliteCommitDelayMs !== undefined ? { commitDelayMs: config.sqliteCommitDelayMs } : {}),
  });
}
