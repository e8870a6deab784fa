/**
 * The key store: one random AES-256 key per data subject (an account), kept outside the event log, so that
 * destroying a key makes that subject's personal fields in the log unreadable for good (crypto-shredding,
 * DESIGN §6). Also keeps the generated master secret when SECRETS_KEY is not configured.
 *
 * The embedded adapter is a SQLite file of its own (`DATA_DIR/keys.sqlite`: WAL, synchronous=FULL,
 * secure_delete, the WAL checkpointed after every destruction so the key's bytes leave the disk). It is
 * durable on purpose: never Redis, which can be flushed — a lost key is a lost account. Several processes
 * on one machine share the file; across machines the key store lives in PostgreSQL (`keyStorePostgres.ts`):
 * by default in the Postgres event store's database, or wherever KEYSTORE_URL says (`openConfiguredKeyStore`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { recordErasure, recordHeldDeletion } from '../backup/erasures.ts';
import { ConfigError, type Config } from '../config.ts';

/** Where per-subject keys live. */
export interface KeyStore {
  /** The subject's key, created on first use; null when the subject's key was destroyed. */
  keyFor(subject: string): Promise<Buffer | null>;
  /** The subject's key without creating one; null when it never existed or was destroyed. */
  lookup(subject: string): Promise<Buffer | null>;
  /** Destroys the subject's key for good (idempotent); a later `keyFor` answers null. */
  destroy(subject: string): Promise<void>;
  /** True once the subject's key was destroyed. */
  destroyed(subject: string): Promise<boolean>;
  /** Records (in the erasure record, for restores) that the subject's account was deleted while a legal hold kept its key; idempotent. */
  keep(subject: string): Promise<void>;
  /** The subjects starting with `prefix` whose keys exist and were not destroyed, in order. */
  liveSubjects(prefix: string): Promise<string[]>;
  /** A named service secret of `bytes` random bytes, created once and kept. */
  serviceSecret(name: string, bytes: number): Promise<Buffer>;
  close(): Promise<void>;
}

/** The embedded key store: a SQLite file beside the event store. */
export class SqliteKeyStore implements KeyStore {
  private readonly db: Database.Database;
  private readonly getKey: Database.Statement;
  private readonly insertKey: Database.Statement;
  private readonly shred: Database.Statement;
  private readonly getSecret: Database.Statement;
  private readonly insertSecret: Database.Statement;
  private readonly live: Database.Statement;

  /** `erasureLog`: the append-only record every destruction is also written to (src/backup/erasures.ts). */
  constructor(
    file: string,
    private readonly erasureLog?: string,
  ) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    // Freed pages are overwritten with zeros, so a destroyed key does not linger in the file.
    this.db.pragma('secure_delete = ON');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(`CREATE TABLE IF NOT EXISTS subject_keys (subject TEXT PRIMARY KEY, key BLOB, destroyed_at TEXT) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS service_secrets (name TEXT PRIMARY KEY, secret BLOB NOT NULL) WITHOUT ROWID;`);
    this.getKey = this.db.prepare('SELECT key, destroyed_at FROM subject_keys WHERE subject = ?');
    this.insertKey = this.db.prepare('INSERT OR IGNORE INTO subject_keys (subject, key) VALUES (?, ?)');
    this.shred = this.db.prepare(
      `INSERT INTO subject_keys (subject, key, destroyed_at) VALUES (?, NULL, ?)
       ON CONFLICT(subject) DO UPDATE SET key = NULL, destroyed_at = COALESCE(destroyed_at, excluded.destroyed_at)`,
    );
    this.getSecret = this.db.prepare('SELECT secret FROM service_secrets WHERE name = ?');
    this.insertSecret = this.db.prepare('INSERT OR IGNORE INTO service_secrets (name, secret) VALUES (?, ?)');
    this.live = this.db.prepare('SELECT subject FROM subject_keys WHERE substr(subject, 1, length(@p)) = @p AND key IS NOT NULL ORDER BY subject');
  }

  private row(subject: string): { key: Buffer | null; destroyed_at: string | null } | undefined {
    return this.getKey.get(subject) as { key: Buffer | null; destroyed_at: string | null } | undefined;
  }

  async keyFor(subject: string): Promise<Buffer | null> {
    const found = this.row(subject);
    if (found) return found.key;
    // INSERT OR IGNORE, then read back: two processes creating at once agree on one key.
    this.insertKey.run(subject, randomBytes(32));
    return this.row(subject)?.key ?? null;
  }

  async lookup(subject: string): Promise<Buffer | null> {
    return this.row(subject)?.key ?? null;
  }

  async destroy(subject: string): Promise<void> {
    // Under the write lock (IMMEDIATE): two processes destroying one key at once record it once.
    const shredOnce = this.db.transaction((at: string) => {
      const before = this.row(subject);
      if (before && before.destroyed_at) return false;
      // Recorded before the key goes: a restore re-applies the record, so a crash in between errs on erasure.
      if (this.erasureLog) recordErasure(this.erasureLog, { subject, at });
      this.shred.run(subject, at);
      return true;
    });
    if (!shredOnce.immediate(new Date().toISOString())) return;
    // Move the change out of the WAL into the main file (whose freed page secure_delete zeroed) and empty the WAL.
    this.db.pragma('wal_checkpoint(TRUNCATE)');
  }

  async destroyed(subject: string): Promise<boolean> {
    return Boolean(this.row(subject)?.destroyed_at);
  }

  async keep(subject: string): Promise<void> {
    if (this.erasureLog) recordHeldDeletion(this.erasureLog, subject);
  }

  async liveSubjects(prefix: string): Promise<string[]> {
    return (this.live.all({ p: prefix }) as Array<{ subject: string }>).map((r) => r.subject);
  }

  async serviceSecret(name: string, bytes: number): Promise<Buffer> {
    this.insertSecret.run(name, randomBytes(bytes));
    return (this.getSecret.get(name) as { secret: Buffer }).secret;
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}

/** Opens the key store of a data directory (destructions are also recorded in `erasureLog`, when given). */
export function openKeyStore(dataDir: string, erasureLog?: string): SqliteKeyStore {
  return new SqliteKeyStore(path.join(dataDir, 'keys.sqlite'), erasureLog);
}

/** Where the key store is: the part of the configuration `openConfiguredKeyStore` reads. */
export type KeyStoreLocation = Pick<Config, 'dataDir' | 'eventStoreUrl' | 'keyStoreUrl'> & Partial<Pick<Config, 'erasureLog'>>;

/** The key store a configuration names: a PostgreSQL database or a SQLite file. */
export type KeyStoreTarget = { kind: 'postgres'; url: string } | { kind: 'sqlite'; file: string };

const POSTGRES_URL = /^postgres(ql)?:\/\//;

/**
 * KEYSTORE_URL when set; else the Postgres event store's database (refused while an older `DATA_DIR/keys.sqlite`
 * exists: its keys would be left behind); else `DATA_DIR/keys.sqlite`. With KurrentDB
 * and no KEYSTORE_URL it refuses (ConfigError): a file under DATA_DIR is reachable from one machine only, while
 * every machine of a KurrentDB deployment must read the same keys.
 */
export function keyStoreTarget(loc: KeyStoreLocation): KeyStoreTarget {
  if (loc.keyStoreUrl !== undefined) {
    return POSTGRES_URL.test(loc.keyStoreUrl) ? { kind: 'postgres', url: loc.keyStoreUrl } : { kind: 'sqlite', file: path.resolve(loc.keyStoreUrl) };
  }
  if (loc.eventStoreUrl !== undefined && POSTGRES_URL.test(loc.eventStoreUrl)) {
    // Before the key store moved into PostgreSQL a Postgres deployment kept its keys in DATA_DIR/keys.sqlite:
    // starting on an empty table instead would make every sealed field unreadable and change the master secret.
    const legacy = path.join(loc.dataDir, 'keys.sqlite');
    if (fs.existsSync(legacy)) {
      throw new ConfigError(
        `invalid configuration: KEYSTORE_URL: ${legacy} holds keys from before the key store moved into PostgreSQL; set KEYSTORE_URL=${legacy} to keep using it`,
      );
    }
    return { kind: 'postgres', url: loc.eventStoreUrl };
  }
  if (loc.eventStoreUrl !== undefined) {
    throw new ConfigError(
      'invalid configuration: KEYSTORE_URL: required with a KurrentDB EVENTSTORE_URL (a postgres:// URL, or a SQLite file path every process of the deployment reaches)',
    );
  }
  return { kind: 'sqlite', file: path.join(loc.dataDir, 'keys.sqlite') };
}

/** Opens the key store the configuration names (see `keyStoreTarget`). */
export async function openConfiguredKeyStore(loc: KeyStoreLocation): Promise<KeyStore> {
  const target = keyStoreTarget(loc);
  if (target.kind === 'sqlite') return new SqliteKeyStore(target.file, loc.erasureLog);
  const { PostgresKeyStore } = await import('./keyStorePostgres.ts');
  return PostgresKeyStore.open(target.url, { erasureLog: loc.erasureLog });
}
