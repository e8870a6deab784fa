/**
 * The API side of the search index: queries, and read-your-writes. A search answers only once the index has
 * applied the log up to the head position the store had when the request arrived — so every write the caller
 * saw acknowledged (an edit, a deletion, a pin, a message just sent) is in it. It waits at most `waitMs`,
 * checking the stored checkpoint (one indexed row read) every few milliseconds, then gives up with 503
 * InternalError, as a write whose projection is late does.
 */
import type { EventStore } from '../eventstore/port.ts';
import { unavailable } from '../errors.ts';
import { SearchIndex, type SearchPage } from './index.ts';

/** Options of the reader. */
export interface SearchReaderOptions {
  store: EventStore;
  /** Path of the index file (`DATA_DIR/search.sqlite`). */
  file: string;
  /** How long a search waits for the index to reach the log head (ms). */
  waitMs: number;
  /** Pause between checkpoint checks while waiting (ms, default 5). */
  pollMs?: number;
}

/** Reads the search index for the search route. */
export class SearchReader {
  private readonly index: SearchIndex;
  constructor(private readonly o: SearchReaderOptions) {
    this.index = new SearchIndex(o.file);
  }

  /** Resolves once the index has applied the log up to its head at call time; 503 after `waitMs`. */
  async caughtUp(): Promise<void> {
    const head = await this.o.store.headPosition();
    if (head === undefined) return;
    const deadline = Date.now() + this.o.waitMs;
    for (;;) {
      const cp = this.index.checkpoint();
      if (cp !== undefined && cp >= head) return;
      if (Date.now() >= deadline) throw unavailable();
      await new Promise((r) => setTimeout(r, this.o.pollMs ?? 5));
    }
  }

  /** Ids of the channel's messages matching the query (see `SearchIndex.search`). */
  search(channelId: string, query: string, page: SearchPage): string[] {
    return this.index.search(channelId, query, page);
  }

  /** Ids of the channel's pinned messages. */
  pinned(channelId: string, page: SearchPage): string[] {
    return this.index.pinned(channelId, page);
  }

  close(): void {
    this.index.close();
  }
}
