/**
 * The key store on PostgreSQL: the same two tables as the SQLite adapter (`subject_keys`, `service_secrets`),
 * in the event store's database by default (`?schema=` honoured), so every machine of a deployment reaches
 * one durable key store. A destroyed key is `UPDATE … SET key = NULL` followed by a `VACUUM` of the table,
 * which prunes the dead row version holding the key's bytes from its page. Sessions commit synchronously
 * (`synchronous_commit=on`): a key handed out is on disk, as every sealed event that uses it will be.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { recordErasure, recordHeldDeletion } from '../backup/erasures.ts';
import { parsePostgresUrl } from '../eventstore/postgres.ts';
import type { KeyStore } from './keyStore.ts';

/** The key store's tables, created when missing (under an advisory lock, so processes starting together agree). */
const SCHEMA = `CREATE TABLE IF NOT EXISTS subject_keys (subject text PRIMARY KEY, key bytea, destroyed_at timestamptz);
  CREATE TABLE IF NOT EXISTS service_secrets (name text PRIMARY KEY, secret bytea NOT NULL);`;

interface KeyRow {
  key: Buffer | null;
  destroyed_at: Date | null;
}

/** The PostgreSQL adapter of the key store port. Open it with `PostgresKeyStore.open`. */
export class PostgresKeyStore implements KeyStore {
  readonly #pool: pg.Pool;
  readonly #schema: string;
  #closed = false;

  readonly #erasureLog: string | undefined;
  /** The follow-up VACUUMs still to run after a destruction (`#vacuumLater`), cleared on close. */
  readonly #followUps = new Set<NodeJS.Timeout>();

  private constructor(url: string, poolSize: number, erasureLog?: string) {
    this.#erasureLog = erasureLog;
    const { connectionString, schema } = parsePostgresUrl(url);
    this.#schema = schema;
    this.#pool = new pg.Pool({ connectionString, max: poolSize, options: `-c search_path=${schema} -c synchronous_commit=on` });
    // An idle client's error (server restart) must not crash the process; the pool drops that client.
    this.#pool.on('error', () => {});
  }

  /** Connects and creates the schema and tables when missing. */
  static async open(url: string, opts: { poolSize?: number; erasureLog?: string } = {}): Promise<PostgresKeyStore> {
    const store = new PostgresKeyStore(url, opts.poolSize ?? 4, opts.erasureLog);
    try {
      await store.#setup();
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  }

  async #setup(): Promise<void> {
    const c = await this.#pool.connect();
    try {
      await c.query('BEGIN');
      await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`stoat-keys:${this.#schema}`]);
      await c.query(`CREATE SCHEMA IF NOT EXISTS ${this.#schema}`);
      await c.query(SCHEMA);
      await c.query('COMMIT');
    } catch (err) {
      await c.query('ROLLBACK').catch(() => {});
      throw err;
    } finally {
      c.release();
    }
  }

  async #row(subject: string): Promise<KeyRow | undefined> {
    const r = await this.#pool.query<KeyRow>('SELECT key, destroyed_at FROM subject_keys WHERE subject = $1', [subject]);
    return r.rows[0];
  }

  async keyFor(subject: string): Promise<Buffer | null> {
    const found = await this.#row(subject);
    if (found) return found.key;
    // Insert if absent, then read back: two processes creating at once agree on one key.
    await this.#pool.query('INSERT INTO subject_keys (subject, key) VALUES ($1, $2) ON CONFLICT (subject) DO NOTHING', [subject, randomBytes(32)]);
    return (await this.#row(subject))?.key ?? null;
  }

  async lookup(subject: string): Promise<Buffer | null> {
    return (await this.#row(subject))?.key ?? null;
  }

  async destroy(subject: string): Promise<void> {
    if ((await this.#row(subject))?.destroyed_at) return;
    const c = await this.#pool.connect();
    try {
      await c.query('BEGIN');
      // One destroyer of a subject at a time (processes of several machines): the record is written once.
      await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`stoat-key:${subject}`]);
      const again = await c.query<KeyRow>('SELECT key, destroyed_at FROM subject_keys WHERE subject = $1', [subject]);
      // Destroyed meanwhile by another process: its VACUUM may have run while this transaction's snapshot still
      // kept the old row version alive, so this one vacuums too (below).
      if (!again.rows[0]?.destroyed_at) {
        // A dump restored later brings the key back: the erasure record outside the database lets `npm run restore`
        // destroy it again. Recorded before the key goes, so a crash in between errs on erasure.
        if (this.#erasureLog) recordErasure(this.#erasureLog, { subject, at: new Date().toISOString() });
        await c.query(
          `INSERT INTO subject_keys (subject, key, destroyed_at) VALUES ($1, NULL, now())
           ON CONFLICT (subject) DO UPDATE SET key = NULL, destroyed_at = COALESCE(subject_keys.destroyed_at, excluded.destroyed_at)`,
          [subject],
        );
      }
      await c.query('COMMIT');
    } catch (err) {
      await c.query('ROLLBACK').catch(() => {});
      c.release();
      throw err;
    }
    c.release();
    await this.#vacuum();
    this.#vacuumLater();
  }

  /** Prunes the old row versions (holding destroyed keys' bytes) from the table's pages (outside any transaction). */
  async #vacuum(): Promise<void> {
    // The update left the old row version (with the key) in its page: VACUUM prunes it (outside any transaction).
    await this.#pool.query(`VACUUM ${this.#schema}.subject_keys`);
  }

  /**
   * VACUUM again 1 s and 10 s later. VACUUM leaves a row version that a snapshot taken before the update can still
   * see, and any statement of the database running at that moment holds one (the event store's polls and group
   * commits share the database): the key's bytes then stayed in the page until autovacuum came, which a small
   * table may never trigger (a quiet `npm test` saw it in test/keystore.postgres.test.ts). Statements are short,
   * so a later VACUUM finds the version dead to everyone. Timers of several destructions do not pile up: one of
   * each delay is pending at a time.
   */
  #vacuumLater(): void {
    for (const ms of [1_000, 10_000]) {
      if ([...this.#followUps].some((t) => (t as NodeJS.Timeout & { stoatDelay?: number }).stoatDelay === ms)) continue;
      const timer = setTimeout(() => {
        this.#followUps.delete(timer);
        if (!this.#closed) void this.#vacuum().catch(() => {});
      }, ms) as NodeJS.Timeout & { stoatDelay?: number };
      timer.stoatDelay = ms;
      timer.unref();
      this.#followUps.add(timer);
    }
  }

  async keep(subject: string): Promise<void> {
    if (this.#erasureLog) recordHeldDeletion(this.#erasureLog, subject);
  }

  async destroyed(subject: string): Promise<boolean> {
    return Boolean((await this.#row(subject))?.destroyed_at);
  }

  async liveSubjects(prefix: string): Promise<string[]> {
    const r = await this.#pool.query<{ subject: string }>(
      'SELECT subject FROM subject_keys WHERE left(subject, length($1)) = $1 AND key IS NOT NULL ORDER BY subject COLLATE "C"',
      [prefix],
    );
    return r.rows.map((row) => row.subject);
  }

  async serviceSecret(name: string, bytes: number): Promise<Buffer> {
    await this.#pool.query('INSERT INTO service_secrets (name, secret) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, randomBytes(bytes)]);
    const r = await this.#pool.query<{ secret: Buffer }>('SELECT secret FROM service_secrets WHERE name = $1', [name]);
    return r.rows[0]!.secret;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of this.#followUps) clearTimeout(t);
    this.#followUps.clear();
    await this.#pool.end();
  }
}
