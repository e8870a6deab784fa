/**
 * The PostgreSQL event store (node-postgres), for deployments that already run Postgres with replication
 * and backups. `EVENTSTORE_URL=postgres://user@host:5432/db` (or `postgresql://`); `?schema=<name>` keeps
 * the tables in their own schema (created when missing).
 *
 * Global order without gaps. Positions come from `max(position) + 1`, assigned inside the append's
 * transaction after taking a transaction-scoped advisory lock (one per schema). Appends therefore commit
 * one after the other, in position order: a transaction only gets the lock after the previous holder has
 * committed and become visible, so a reader that has seen position P can never later find a committed
 * event below P (no event "commits late with a smaller number"), and a rolled-back append leaves no hole.
 * Throughput comes from group commit instead of parallel transactions: appends issued while a
 * transaction is in flight are queued and written together by the next one (one WAL flush for many).
 *
 * Durability: every session runs with `synchronous_commit=on`, so an acknowledged append is flushed.
 *
 * Time limits: every session runs with `lock_timeout`, `statement_timeout` and
 * `idle_in_transaction_session_timeout` (`PostgresTimeouts`). A process that stops while it holds the append
 * lock inside an open transaction (paused, partitioned) would otherwise stop every process's appends for as
 * long as it lasts: the server ends its session after the idle limit, which frees the lock, and appends that
 * waited longer than the lock limit fail with a retryable error (SQLSTATE 55P03: 503 at the HTTP edge).
 * Multi-stream appends check every stream's expected revision under the lock and write all or nothing.
 *
 * Subscriptions poll the table from their checkpoint. Each commit sends `NOTIFY` (delivered on commit) on a
 * channel per schema; a LISTEN connection wakes idle subscriptions at once, and polling (default 1 s) is
 * the safety net for missed notifications or a dropped LISTEN connection (which reconnects).
 *
 * Schema changes are versioned: `stoat_migrations` lists the applied versions; `MIGRATIONS[i]` is version
 * i+1 and is applied once, under an advisory lock, when a process opens the store.
 */
import { createHash, randomUUID } from 'node:crypto';
import os from 'node:os';
import pg from 'pg';
import type {
  AppendResult,
  EventStore,
  ExpectedRevision,
  NewEvent,
  ReadAllOptions,
  ReadStreamOptions,
  RecordedEvent,
  StoreStats,
  StreamWrite,
  SubscribeOptions,
  Subscription,
} from './port.ts';
import { WrongExpectedRevisionError } from './port.ts';
import { encodeWrites, matchesExpected as matches, validateEvents, validateWrites, type EncodedWrite } from './validate.ts';

/** The store's session time limits (ms; see the header). */
export interface PostgresTimeouts {
  /** Longest wait for a lock (the append lock): the append then fails with SQLSTATE 55P03. */
  lockMs: number;
  /** Longest run of one statement, lock wait included. */
  statementMs: number;
  /** A session idle inside an open transaction this long is ended by the server (its locks freed). */
  idleInTransactionMs: number;
}

/** The defaults of `PG_LOCK_TIMEOUT_MS`, `PG_STATEMENT_TIMEOUT_MS` and `PG_IDLE_TX_TIMEOUT_MS`. */
export const DEFAULT_TIMEOUTS: PostgresTimeouts = { lockMs: 5_000, statementMs: 15_000, idleInTransactionMs: 10_000 };

/** Options of the Postgres store. */
export interface PostgresStoreOptions {
  /** How often an idle subscription polls when no notification came (ms, default 1000). */
  pollIntervalMs?: number;
  /** Connections in the pool (default 10). */
  poolSize?: number;
  /** Most appends written by one transaction (default 1000). */
  maxGroup?: number;
  /** Injected fault for tests: runs inside the transaction before COMMIT. */
  beforeCommit?: () => Promise<void> | void;
  /** Session time limits (default `DEFAULT_TIMEOUTS`). */
  timeouts?: PostgresTimeouts;
}

/** Versioned schema changes; index i is version i+1. Never edit one that has shipped: add a new one. */
export const MIGRATIONS: readonly string[] = [
  `CREATE TABLE events (
     position bigint PRIMARY KEY,
     id text NOT NULL,
     stream text NOT NULL,
     revision integer NOT NULL,
     type text NOT NULL,
     data json NOT NULL,
     metadata json NOT NULL,
     recorded_at timestamptz NOT NULL DEFAULT now(),
     UNIQUE (stream, revision)
   );
   CREATE TABLE store_info (key text PRIMARY KEY, value text NOT NULL);`,
];

interface Row {
  position: string;
  id: string;
  stream: string;
  revision: number;
  type: string;
  data: unknown;
  metadata: RecordedEvent['metadata'];
}

interface Pending {
  writes: EncodedWrite[];
  resolve: (r: AppendResult[]) => void;
  reject: (e: unknown) => void;
}

const COLUMNS = 'position, id, stream, revision, type, data, metadata';

/** Splits `?schema=` off a connection string (node-postgres does not know it). */
export function parsePostgresUrl(url: string): { connectionString: string; schema: string } {
  const u = new URL(url);
  const schema = u.searchParams.get('schema') ?? 'public';
  if (!/^[a-z_][a-z0-9_]{0,47}$/.test(schema)) throw new Error(`postgres schema "${schema}": lower-case letters, digits and _ only`);
  u.searchParams.delete('schema');
  return { connectionString: u.toString(), schema };
}

/** The append lock's key for a schema: 64 bits of a hash of its name (advisory locks are per database, not per schema). */
export function appendLockKey(schema: string): string {
  return String(createHash('sha256').update(`stoat-events:${schema}`).digest().readBigInt64BE(0));
}

/** Postgres adapter of the event store port. Open it with `openPostgresEventStore`. */
export class PostgresEventStore implements EventStore {
  readonly #pool: pg.Pool;
  readonly #schema: string;
  readonly #channel: string;
  readonly #lockKey: string;
  readonly #opts: PostgresStoreOptions;
  readonly #connectionString: string;
  #identity = '';
  #queue: Pending[] = [];
  #flushing: Promise<void> | undefined;
  #closed = false;
  readonly #wakers = new Set<() => void>();
  readonly #stats: StoreStats = { appends: 0, commits: 0 };
  #listener: pg.Client | undefined;
  #listenRetry: NodeJS.Timeout | undefined;
  readonly #loops = new Set<Promise<void>>();

  private constructor(url: string, opts: PostgresStoreOptions) {
    const { connectionString, schema } = parsePostgresUrl(url);
    this.#connectionString = connectionString;
    this.#schema = schema;
    this.#channel = `stoat_events_${schema}`;
    this.#opts = opts;
    // One advisory lock key per schema, so two deployments in one database do not serialise each other.
    this.#lockKey = appendLockKey(schema);
    const t = opts.timeouts ?? DEFAULT_TIMEOUTS;
    const ms = (v: number) => Math.max(1, Math.round(v));
    this.#pool = new pg.Pool({
      connectionString,
      max: opts.poolSize ?? 10,
      // Which process a session belongs to, for operators (pg_stat_activity) and tests.
      application_name: `stoatish ${os.hostname().slice(0, 40)} ${process.pid}`,
      options:
        `-c search_path=${schema} -c synchronous_commit=on -c lock_timeout=${ms(t.lockMs)}` +
        ` -c statement_timeout=${ms(t.statementMs)} -c idle_in_transaction_session_timeout=${ms(t.idleInTransactionMs)}`,
    });
    // An idle client's error (server restart) must not crash the process; the pool drops that client.
    this.#pool.on('error', () => {});
  }

  /** Connects, creates the schema or migrates it, and starts listening for commits. */
  static async open(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresEventStore> {
    const store = new PostgresEventStore(url, opts);
    try {
      await store.#migrate();
      await store.#listen();
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }

  async #migrate(): Promise<void> {
    const c = await this.#pool.connect();
    // The server may end the session between queries: without a listener that 'error' would crash the process.
    const onError = () => {};
    c.on('error', onError);
    try {
      // A migration may wait for another process's and may take long: no lock or statement limit for it.
      await c.query('BEGIN; SET LOCAL lock_timeout = 0; SET LOCAL statement_timeout = 0');
      await c.query('SELECT pg_advisory_xact_lock($1)', [this.#lockKey]);
      await c.query(`CREATE SCHEMA IF NOT EXISTS ${this.#schema}`);
      await c.query('CREATE TABLE IF NOT EXISTS stoat_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
      const { rows } = await c.query<{ v: number | null }>('SELECT max(version) AS v FROM stoat_migrations');
      const have = rows[0]?.v ?? 0;
      if (have > MIGRATIONS.length) {
        throw new Error(`the Postgres event store is at schema version ${have}, this build knows ${MIGRATIONS.length}: upgrade this process`);
      }
      for (let v = have + 1; v <= MIGRATIONS.length; v++) {
        await c.query(MIGRATIONS[v - 1]!);
        await c.query('INSERT INTO stoat_migrations (version) VALUES ($1)', [v]);
      }
      await c.query(`INSERT INTO store_info (key, value) VALUES ('identity', $1) ON CONFLICT (key) DO NOTHING`, [`postgres:${randomUUID()}`]);
      const id = await c.query<{ value: string }>(`SELECT value FROM store_info WHERE key = 'identity'`);
      this.#identity = id.rows[0]!.value;
      await c.query('COMMIT');
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      c.off('error', onError);
      c.release();
    }
  }

  /** A LISTEN connection that wakes subscriptions; on loss it reconnects (polling covers the gap). */
  async #listen(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({ connectionString: this.#connectionString });
    const retry = () => {
      if (this.#listener !== client) return;
      this.#listener = undefined;
      void client.end().catch(() => undefined);
      if (this.#closed) return;
      this.#listenRetry = setTimeout(() => void this.#listen().catch(retry), 1000);
      this.#listenRetry.unref();
    };
    this.#listener = client;
    client.on('error', retry);
    client.on('end', retry);
    client.on('notification', () => this.wake());
    try {
      await client.connect();
      await client.query(`LISTEN ${this.#channel}`);
    } catch (err) {
      retry();
      throw err;
    }
    // Something may have committed while we were not listening.
    this.wake();
  }

  /** The store's identity (a checkpoint from another store is meaningless here). */
  async identity(): Promise<string> {
    return this.#identity;
  }

  append(stream: string, events: NewEvent[], expected: ExpectedRevision): Promise<AppendResult> {
    const writes = [{ stream, events, expected }];
    return this.#enqueue(writes, () => validateEvents(stream, events)).then((r) => r[0]!);
  }

  appendMany(writes: StreamWrite[]): Promise<AppendResult[]> {
    return this.#enqueue(writes, () => validateWrites(writes));
  }

  #enqueue(writes: StreamWrite[], validate: () => void): Promise<AppendResult[]> {
    if (this.#closed) return Promise.reject(new Error('the event store is closed'));
    this.#stats.appends++;
    let encoded: EncodedWrite[];
    try {
      validate();
      // Encoded before it joins a group: a payload JSON cannot hold fails this append only, not its group.
      encoded = encodeWrites(writes);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({ writes: encoded, resolve, reject });
      this.#startFlush();
    });
  }

  /** One flush loop at a time; an append queued as the loop ends starts the next one. */
  #startFlush(): void {
    if (this.#flushing) return;
    this.#flushing = this.#flush().finally(() => {
      this.#flushing = undefined;
      if (this.#queue.length > 0) this.#startFlush();
    });
  }

  async #flush(): Promise<void> {
    // Yield once so appends issued in the same turn join the first group.
    await new Promise((r) => setImmediate(r));
    while (this.#queue.length > 0) {
      const max = this.#opts.maxGroup ?? 1000;
      const batch = this.#queue.slice(0, max);
      this.#queue = this.#queue.slice(max);
      await this.#write(batch);
    }
  }

  /** Writes a group of appends in one transaction, under the schema's append lock. */
  async #write(batch: Pending[]): Promise<void> {
    let client: pg.PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (err) {
      for (const p of batch) p.reject(err);
      return;
    }
    const outcomes: Array<{ ok: AppendResult[] } | { err: unknown }> = [];
    let broken: unknown;
    let lost: unknown;
    // The server may end the session between queries (idle limit, pg_terminate_backend, a restart): without a
    // listener on the checked-out client that 'error' would crash the process. The next query then fails.
    const onError = (err: unknown) => (lost ??= err);
    client.on('error', onError);
    let last = 0n;
    try {
      // One round trip for BEGIN and the lock (the key is a number of our own, safe to inline); the reads
      // below run after the lock is held, so their snapshot sees every earlier append committed.
      await client.query(`BEGIN; SELECT pg_advisory_xact_lock(${this.#lockKey})`);
      const names = [...new Set(batch.flatMap((p) => p.writes.map((w) => w.stream)))];
      const revs = await client.query<{ stream: string; revision: number | null; head: string | null }>(
        `SELECT s.stream,
                (SELECT e.revision FROM events e WHERE e.stream = s.stream ORDER BY e.revision DESC LIMIT 1) AS revision,
                (SELECT max(position) FROM events) AS head
           FROM unnest($1::text[]) AS s(stream)`,
        [names],
      );
      const current = new Map<string, number>(revs.rows.map((r) => [r.stream, r.revision ?? -1]));
      const before = BigInt(revs.rows[0]?.head ?? '0');
      let position = before;
      const cols = { position: [] as string[], id: [] as string[], stream: [] as string[], revision: [] as number[], type: [] as string[], data: [] as string[], metadata: [] as string[] };
      for (const p of batch) {
        let failure: WrongExpectedRevisionError | undefined;
        for (const w of p.writes) {
          const actual = current.get(w.stream)!;
          if (!matches(w.expected, actual)) {
            failure = new WrongExpectedRevisionError(w.stream, w.expected, actual);
            break;
          }
        }
        if (failure) {
          outcomes.push({ err: failure });
          continue;
        }
        const results: AppendResult[] = [];
        for (const w of p.writes) {
          let rev = current.get(w.stream)!;
          let streamLast: bigint | undefined;
          for (const e of w.events) {
            rev++;
            position++;
            streamLast = position;
            cols.position.push(String(position));
            cols.id.push(e.id);
            cols.stream.push(w.stream);
            cols.revision.push(rev);
            cols.type.push(e.type);
            cols.data.push(e.data);
            cols.metadata.push(e.metadata);
          }
          current.set(w.stream, rev);
          // An empty write reports the head at commit time (fixed up below), like the SQLite store.
          results.push({ revision: rev, position: streamLast ?? -1n });
        }
        outcomes.push({ ok: results });
      }
      if (cols.position.length > 0) {
        // The rows and the notification (delivered at COMMIT) in one statement.
        await client.query(
          `WITH ins AS (
             INSERT INTO events (${COLUMNS})
             SELECT p, i, s, r, t, d::json, m::json
               FROM unnest($1::bigint[], $2::text[], $3::text[], $4::integer[], $5::text[], $6::text[], $7::text[]) AS u(p, i, s, r, t, d, m)
             RETURNING 1)
           SELECT pg_notify($8, $9), (SELECT count(*) FROM ins)`,
          [cols.position, cols.id, cols.stream, cols.revision, cols.type, cols.data, cols.metadata, this.#channel, String(position)],
        );
      }
      last = position;
      await this.#opts.beforeCommit?.();
      if (lost !== undefined) throw lost;
      await client.query('COMMIT');
      this.#stats.commits++;
    } catch (err) {
      // A query after the session was lost fails with a generic message: report why it was lost (its SQLSTATE).
      broken = lost ?? err;
      await client.query('ROLLBACK').catch(() => undefined);
    } finally {
      client.off('error', onError);
      // A lost session is dropped from the pool (so is a client left in an unknown state by a non-SQL error).
      client.release(lost !== undefined ? (lost as Error) : broken instanceof Error && !('code' in broken) ? broken : undefined);
    }
    if (broken !== undefined) {
      for (const p of batch) p.reject(broken);
      return;
    }
    for (let i = 0; i < batch.length; i++) {
      const o = outcomes[i]!;
      if ('ok' in o) {
        for (const r of o.ok) if (r.position === -1n) r.position = last;
        batch[i]!.resolve(o.ok);
      } else batch[i]!.reject(o.err);
    }
    this.wake();
  }

  async readStream(stream: string, options: ReadStreamOptions = {}): Promise<RecordedEvent[]> {
    const max = options.maxCount ?? 2147483647;
    if (max <= 0) return [];
    const backwards = options.direction === 'backwards';
    const { rows } = await this.#pool.query<Row>(
      backwards
        ? `SELECT ${COLUMNS} FROM events WHERE stream = $1 AND revision <= $2 ORDER BY revision DESC LIMIT $3`
        : `SELECT ${COLUMNS} FROM events WHERE stream = $1 AND revision >= $2 ORDER BY revision ASC LIMIT $3`,
      [stream, options.fromRevision ?? (backwards ? 2147483647 : 0), max],
    );
    return rows.map(toRecorded);
  }

  async streamRevision(stream: string): Promise<number> {
    const { rows } = await this.#pool.query<{ revision: number }>(
      'SELECT revision FROM events WHERE stream = $1 ORDER BY revision DESC LIMIT 1',
      [stream],
    );
    return rows[0]?.revision ?? -1;
  }

  async *readAll(options: ReadAllOptions = {}): AsyncIterable<RecordedEvent> {
    let after = options.after ?? 0n;
    let left = options.maxCount ?? Number.MAX_SAFE_INTEGER;
    while (left > 0 && !this.#closed) {
      const page = await this.readPage(after, Math.min(1000, left));
      if (page.length === 0) return;
      for (const e of page) yield e;
      after = page[page.length - 1]!.position;
      left -= page.length;
    }
  }

  /** One page of the log after a position. */
  async readPage(after: bigint | undefined, limit: number): Promise<RecordedEvent[]> {
    const { rows } = await this.#pool.query<Row>(`SELECT ${COLUMNS} FROM events WHERE position > $1 ORDER BY position ASC LIMIT $2`, [
      String(after ?? 0n),
      limit,
    ]);
    return rows.map(toRecorded);
  }

  async headPosition(): Promise<bigint | undefined> {
    const { rows } = await this.#pool.query<{ p: string | null }>('SELECT max(position) AS p FROM events');
    const p = rows[0]?.p;
    return p === null || p === undefined ? undefined : BigInt(p);
  }

  /** Id of the event at a position. */
  async eventIdAt(position: bigint): Promise<string | undefined> {
    const { rows } = await this.#pool.query<{ id: string }>('SELECT id FROM events WHERE position = $1', [String(position)]);
    return rows[0]?.id;
  }

  /** Wakes idle subscriptions. */
  wake(): void {
    for (const w of [...this.#wakers]) w();
  }

  subscribe(options: SubscribeOptions): Subscription {
    const batchSize = options.batchSize ?? 500;
    const pollMs = this.#opts.pollIntervalMs ?? 1000;
    let after = options.after;
    let stopped = false;
    let wake: (() => void) | undefined;
    let timer: NodeJS.Timeout | undefined;
    let woken = false;
    const sleep = () =>
      new Promise<void>((resolve) => {
        // A notification that came while the last page was being read must not be lost.
        if (woken) {
          woken = false;
          return resolve();
        }
        wake = () => {
          if (timer) clearTimeout(timer);
          this.#wakers.delete(wake!);
          wake = undefined;
          resolve();
        };
        this.#wakers.add(wake);
        timer = setTimeout(wake, pollMs);
      });
    const flag = () => (woken = true);
    this.#wakers.add(flag);
    const loop = (async () => {
      let caughtUp = false;
      while (!stopped && !this.#closed) {
        woken = false;
        const page = await this.readPage(after, batchSize);
        if (stopped) break;
        if (page.length > 0) {
          await options.onEvents(page);
          after = page[page.length - 1]!.position;
          continue;
        }
        if (!caughtUp) {
          caughtUp = true;
          options.onCaughtUp?.();
        }
        await sleep();
      }
    })()
      .catch((err: unknown) => {
        if (stopped || this.#closed) return;
        stopped = true;
        options.onError?.(err instanceof Error ? err : new Error(String(err)));
      })
      .finally(() => this.#wakers.delete(flag));
    this.#loops.add(loop);
    void loop.finally(() => this.#loops.delete(loop));
    return {
      close: async () => {
        stopped = true;
        wake?.();
        await loop;
      },
    };
  }

  stats(): StoreStats {
    return { ...this.#stats };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#flushing;
    this.#closed = true;
    if (this.#listenRetry) clearTimeout(this.#listenRetry);
    const l = this.#listener;
    this.#listener = undefined;
    this.wake();
    await Promise.allSettled([...this.#loops]);
    await l?.end().catch(() => undefined);
    await this.#pool.end().catch(() => undefined);
  }
}

/** Opens (and creates or migrates) the Postgres store at a `postgres://` URL. */
export function openPostgresEventStore(url: string, opts: PostgresStoreOptions = {}): Promise<PostgresEventStore> {
  return PostgresEventStore.open(url, opts);
}

function toRecorded(r: Row): RecordedEvent {
  return {
    id: r.id,
    stream: r.stream,
    revision: r.revision,
    position: BigInt(r.position),
    type: r.type,
    data: r.data,
    metadata: r.metadata,
  };
}
