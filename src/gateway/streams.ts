/**
 * Follows the client-event streams of every projector partition (`events:<n>:<i>`, written by the projector
 * in the same MULTI as its checkpoint) and the presence stream with XREAD BLOCK on a connection of its own.
 * Each API process reads every stream from the position it had when the process started, and hands the
 * events over in stream order.
 */
import { createRedis, streamEnds, type RedisClient } from '../redis.ts';
import type { Logger } from 'pino';
import { controlKeys } from '../readmodel/keys.ts';
import type { QueuedEvent } from './socket.ts';

/** Options of the reader. */
export interface StreamReaderOptions {
  redisUrl: string;
  prefix: string;
  partitions: number;
  log: Logger;
  /** Called with each event, in order per stream; the reader waits for it before reading on. */
  onEvent: (event: QueuedEvent) => Promise<void>;
}

/** The reading loop. */
export class ClientEventReader {
  private readonly conn: RedisClient;
  private readonly keys: string[];
  private readonly ids: string[] = [];
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(private readonly o: StreamReaderOptions) {
    this.conn = createRedis(o.redisUrl, { maxRetriesPerRequest: null, enableOfflineQueue: true, connectTimeout: 5000 });
    this.conn.on('error', (err) => o.log.debug({ err: err.message }, 'gateway stream reader: redis error'));
    const ctl = controlKeys(o.prefix);
    this.keys = [...Array.from({ length: o.partitions }, (_, i) => ctl.clientEvents(o.partitions, i)), ctl.presenceEvents];
  }

  /** Resolves the start positions (the current end of every stream, like `$`) and starts reading. */
  async start(): Promise<void> {
    this.ids.push(...(await streamEnds(this.conn, this.keys)));
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let res: Array<[string, Array<[string, string[]]>]> | null;
      try {
        res = (await this.conn.xread('COUNT', 500, 'BLOCK', 5000, 'STREAMS', ...this.keys, ...this.ids)) as typeof res;
      } catch (err) {
        if (this.stopped) return;
        this.o.log.warn({ err }, 'gateway stream reader: XREAD failed, retrying');
        await new Promise((r) => setTimeout(r, 500));
        continue;
      }
      if (!res) continue;
      for (const [key, entries] of res) {
        const index = this.keys.indexOf(key);
        for (const [id, fields] of entries) {
          this.ids[index] = id;
          const raw = fields[fields.indexOf('e') + 1];
          if (raw === undefined) continue;
          let event: QueuedEvent;
          try {
            event = JSON.parse(raw) as QueuedEvent;
          } catch {
            this.o.log.warn({ id, key }, 'gateway stream reader: unreadable entry skipped');
            continue;
          }
          await this.o.onEvent(event);
        }
      }
    }
  }

  /** Stops reading and closes the connection. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.conn.disconnect();
    await this.loop?.catch(() => {});
  }
}
