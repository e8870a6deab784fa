/**
 * Backups and restores of a data directory (`npm run backup -- --to DIR`, `npm run restore -- --from DIR`).
 *
 * A backup is a directory: `events.sqlite` (the embedded event store, copied through SQLite's online backup
 * API while the service runs: one consistent snapshot, never a file copy), `keys.sqlite` (the key store, the
 * same way, taken after the log so every key its events use is in it), `files/` (the blobs, hard links where the
 * filesystem allows), `erasures.jsonl` (the erasure record) and `manifest.json`. On PostgreSQL and KurrentDB the
 * log is the database's to back up (pg_dump or base backups; KurrentDB's own backups): the command says so and
 * backs up the rest.
 *
 * A restore refuses while a service process holds the data directory (src/backup/holders.ts), checks the
 * manifest against what the backup holds, puts the files in place, records the rewind in the restored log
 * (`LogRewound`, src/eventstore/rewind.ts: followers resume after the restored head, never repeating a push),
 * and re-applies the erasure record: every account whose key was destroyed since the backup is destroyed again
 * and its deletion re-appended. The next start finds the read models ahead of the log and rebuilds them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import type { EventStore, StreamWrite } from '../eventstore/port.ts';
import { openEventStore } from '../eventstore/open.ts';
import { recordRewind, REWIND_STREAM } from '../eventstore/rewind.ts';
import { PersonalDataStore } from '../personal/store.ts';
import { keyStoreTarget, openConfiguredKeyStore } from '../personal/keyStore.ts';
import { evolveAccount, type AccountState } from '../domain/account/state.ts';
import { upcast } from '../domain/events.ts';
import { accountDeletionWrites } from '../http/routes/auth/accountDeletion.ts';
import { mergeErasures, readErasures } from './erasures.ts';
import { liveHolders } from './holders.ts';

/** `manifest.json` of a backup. */
export interface Manifest {
  /** Format of this manifest (1). */
  format: 1;
  /** `sqlite`, `postgres` or `kurrentdb`: which engine's log this backup holds (only `sqlite` backups hold it). */
  engine: 'sqlite' | 'postgres' | 'kurrentdb';
  /** The event store's identity (`EventStore.identity()`). */
  store: string;
  /** Position of the last event in the backed-up log (decimal; null for an empty log). */
  head: string | null;
  /** Events in the backed-up log. */
  events: number;
  /** Whether `events.sqlite` is in the backup (only on SQLite). */
  log: boolean;
  /** Whether `keys.sqlite` (a SQLite key store) is in the backup; false when the keys live in PostgreSQL. */
  keys?: boolean;
  /** Blobs in `files/`. */
  files: number;
  /** ISO-8601 time the backup was taken (when the log snapshot was). */
  takenAt: string;
}

/** The engine of a configuration. */
function engineOf(config: Pick<Config, 'eventStoreUrl'>): Manifest['engine'] {
  if (!config.eventStoreUrl) return 'sqlite';
  return /^postgres(ql)?:\/\//.test(config.eventStoreUrl) ? 'postgres' : 'kurrentdb';
}

/** Copies a SQLite file through the online backup API (a consistent snapshot while other processes write). */
async function sqliteBackup(from: string, to: string): Promise<void> {
  const db = new Database(from, { readonly: true, fileMustExist: true, timeout: 10_000 });
  try {
    await db.backup(to);
  } finally {
    db.close();
  }
}

/** Head, count and identity of a SQLite event-store file. */
function describeSqliteLog(file: string): { store: string; head: string | null; events: number } {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const store = db.prepare(`SELECT value FROM store_info WHERE key = 'identity'`).pluck().get() as string;
    const r = db.prepare('SELECT max(position) AS head, count(*) AS n FROM events').get() as { head: number | null; n: number };
    return { store, head: r.head === null ? null : String(r.head), events: r.n };
  } finally {
    db.close();
  }
}

/** Hard-links (or copies, across filesystems) every file under `from` into `to`; returns how many. */
function linkTree(from: string, to: string): number {
  if (!fs.existsSync(from)) return 0;
  let n = 0;
  fs.mkdirSync(to, { recursive: true });
  for (const d of fs.readdirSync(from, { withFileTypes: true })) {
    const a = path.join(from, d.name);
    const b = path.join(to, d.name);
    if (d.isDirectory()) n += linkTree(a, b);
    else if (d.isFile()) {
      // A blob never changes once written (uploads write a temporary name and rename), so a link is a copy.
      if (d.name.endsWith('.tmp') || d.name.startsWith('.')) continue;
      try {
        fs.linkSync(a, b);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EEXIST') continue;
        if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP') throw err;
        fs.copyFileSync(a, b);
      }
      n++;
    }
  }
  return n;
}

/** Takes a backup of the configured data directory into `to` (a new or empty directory). Returns its manifest and notes. */
export async function takeBackup(config: Config, to: string, log?: Logger): Promise<{ manifest: Manifest; notes: string[] }> {
  const dir = path.resolve(to);
  if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) throw new Error(`${dir} is not empty: a backup goes into a new or empty directory`);
  fs.mkdirSync(dir, { recursive: true });
  const notes: string[] = [];
  const engine = engineOf(config);
  let described: { store: string; head: string | null; events: number };
  const takenAt = new Date().toISOString();
  if (engine === 'sqlite') {
    const file = path.join(config.dataDir, 'events.sqlite');
    if (!fs.existsSync(file)) throw new Error(`no event store at ${file}`);
    await sqliteBackup(file, path.join(dir, 'events.sqlite'));
    // The manifest describes the snapshot itself, not the live file (which has moved on).
    described = describeSqliteLog(path.join(dir, 'events.sqlite'));
  } else {
    const store = await openEventStore(config);
    try {
      const head = await store.headPosition();
      let events = 0;
      if (engine === 'postgres') for await (const _ of store.readAll()) events++;
      described = { store: await store.identity(), head: head === undefined ? null : head.toString(), events };
    } finally {
      await store.close();
    }
    notes.push(
      engine === 'postgres'
        ? 'The event log is in PostgreSQL: back it up with pg_dump (or your base backups / WAL archive) — this command does not copy it. The manifest records the head it saw; restore the database first, then run `npm run restore` for the rest.'
        : 'The event log is in KurrentDB: back it up with KurrentDB’s own backups — this command does not copy it.',
    );
  }
  const keyTarget = keyStoreTarget(config);
  let keys = false;
  if (keyTarget.kind === 'postgres') {
    notes.push('The key store is in PostgreSQL (subject_keys, service_secrets): pg_dump of that database covers it — this command does not copy it.');
  } else if (fs.existsSync(keyTarget.file)) {
    await sqliteBackup(keyTarget.file, path.join(dir, 'keys.sqlite'));
    keys = true;
  } else notes.push(`no key store at ${keyTarget.file}`);
  const files = linkTree(path.join(config.dataDir, 'files'), path.join(dir, 'files'));
  if (fs.existsSync(config.erasureLog)) fs.copyFileSync(config.erasureLog, path.join(dir, 'erasures.jsonl'));
  const manifest: Manifest = { format: 1, engine, store: described.store, head: described.head, events: described.events, log: engine === 'sqlite', keys, files, takenAt };
  fs.writeFileSync(path.join(dir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  log?.info({ manifest }, 'backup taken');
  return { manifest, notes };
}

/** Reads and checks a backup's manifest against the files it names. */
export function checkBackup(from: string): Manifest {
  const dir = path.resolve(from);
  const file = path.join(dir, 'manifest.json');
  if (!fs.existsSync(file)) throw new Error(`${dir} has no manifest.json: not a backup`);
  const m = JSON.parse(fs.readFileSync(file, 'utf8')) as Manifest;
  if (m.format !== 1) throw new Error(`manifest format ${String(m.format)} is not supported (1 is)`);
  if (m.log) {
    const log = path.join(dir, 'events.sqlite');
    if (!fs.existsSync(log)) throw new Error('the manifest names an event log but events.sqlite is missing');
    const d = describeSqliteLog(log);
    if (d.store !== m.store || d.head !== m.head || d.events !== m.events) {
      throw new Error(`events.sqlite does not match the manifest (store ${d.store}, head ${d.head}, ${d.events} events; the manifest says ${m.store}, ${m.head}, ${m.events})`);
    }
  }
  if (m.keys !== false && !fs.existsSync(path.join(dir, 'keys.sqlite'))) throw new Error('keys.sqlite is missing from the backup');
  return m;
}

/** Whether a backup holds `keys.sqlite` (manifests written before the field existed always did). */
function holdsKeys(m: Manifest): boolean {
  return m.keys !== false;
}

/** Result of a restore. */
export interface RestoreResult {
  manifest: Manifest;
  /** Accounts deleted after the backup whose deletion was re-applied. */
  reapplied: string[];
  notes: string[];
}

/** Restores a backup into the configured data directory (fresh or existing). */
export async function restoreBackup(config: Config, from: string, log?: Logger): Promise<RestoreResult> {
  const dir = path.resolve(from);
  const holders = liveHolders(config.dataDir);
  if (holders.length > 0) {
    throw new Error(`a service process holds ${config.dataDir} (${holders.map((h) => `${h.host} pid ${h.pid}`).join(', ')}): stop it first (a file of another machine in ${path.join(config.dataDir, 'run')} is removed by hand once that process is gone)`);
  }
  const manifest = checkBackup(dir);
  const engine = engineOf(config);
  if (manifest.log && engine !== 'sqlite') throw new Error(`the backup holds a SQLite log but EVENTSTORE_URL names ${engine}: migrate it with \`npm run events migrate\` after restoring into a SQLite data directory`);
  if (!manifest.log && engine === 'sqlite') throw new Error(`the backup holds no event log (its log was in ${manifest.engine}): restore that database, and point EVENTSTORE_URL at it`);
  const notes: string[] = [];
  fs.mkdirSync(config.dataDir, { recursive: true });

  // The files of the data directory are replaced, each through a temporary name and a rename.
  const put = async (name: string, target = path.join(config.dataDir, name)) => {
    const tmp = `${target}.restore-${process.pid}`;
    fs.rmSync(tmp, { force: true });
    await sqliteBackup(path.join(dir, name), tmp);
    for (const f of [`${target}-wal`, `${target}-shm`]) fs.rmSync(f, { force: true });
    fs.renameSync(tmp, target);
  };
  if (manifest.log) await put('events.sqlite');
  const keyTarget = keyStoreTarget(config);
  if (holdsKeys(manifest)) {
    if (keyTarget.kind !== 'sqlite') throw new Error('the backup holds a SQLite key store but the configuration names a PostgreSQL one: set KEYSTORE_URL to a file to restore it');
    fs.mkdirSync(path.dirname(keyTarget.file), { recursive: true });
    await put('keys.sqlite', keyTarget.file);
  } else notes.push('the backup holds no key store (it was in PostgreSQL): restore that database with the log');
  const filesDir = path.join(config.dataDir, 'files');
  const aside = `${filesDir}.before-restore-${process.pid}`;
  if (fs.existsSync(filesDir)) fs.renameSync(filesDir, aside);
  linkTree(path.join(dir, 'files'), filesDir);
  fs.rmSync(aside, { recursive: true, force: true });
  // The search index is a read model of the log: rebuilt from the restored one.
  for (const f of ['search.sqlite', 'search.sqlite-wal', 'search.sqlite-shm']) fs.rmSync(path.join(config.dataDir, f), { force: true });

  // The erasure record: this directory's (deletions after the backup) united with the backup's own.
  const erasures = mergeErasures(config.erasureLog, readErasures(path.join(dir, 'erasures.jsonl')));
  const raw = await openEventStore({ ...config, sqliteCommitDelayMs: 0 });
  const keys = await openConfiguredKeyStore(config);
  const reapplied: string[] = [];
  try {
    if (engine === 'sqlite' && (await raw.identity()) !== manifest.store) throw new Error('the restored log has another identity than the manifest');
    const head = await raw.headPosition();
    if (engine !== 'sqlite') notes.push(`the log in ${engine} ends at ${head?.toString() ?? 'nothing'}; the backup's manifest recorded ${manifest.head ?? 'nothing'}`);
    // Followers that act outside the service (push, previews) resume after this head, never repeating a delivery.
    await recordRewind(raw, { head: (head ?? 0n).toString(), by: 'restore' }, await raw.streamRevision(REWIND_STREAM));
    const store = new PersonalDataStore(raw, keys);
    const destroyed = new Set(erasures.filter((e) => !e.held).map((e) => e.subject));
    for (const e of erasures) {
      if (e.held) {
        // Deleted under a legal hold: the deletion again, appended past the boundary so the key stays (the hold
        // is in the restored log if it was placed before the backup; one placed after it is not, and the
        // projector's repeat of the deletion then destroys the key: re-place such holds before starting).
        if (!destroyed.has(e.subject) && !reapplied.includes(e.subject) && (await reapplyDeletion(store, e.subject, raw))) reapplied.push(e.subject);
        continue;
      }
      await keys.destroy(e.subject);
      if (!reapplied.includes(e.subject) && (await reapplyDeletion(store, e.subject))) reapplied.push(e.subject);
    }
  } finally {
    await keys.close();
    await raw.close();
  }
  log?.info({ manifest, reapplied: reapplied.length }, 'backup restored');
  return { manifest, reapplied, notes };
}

/**
 * Appends an account's deletion again when the restored log lacks it (its key is already destroyed, or kept by a
 * legal hold: then `appendTo` is the raw store, past the personal-data boundary's erasure). Its bots are
 * not deleted again here (no read models to find them while restoring); their tokens are refused all the same,
 * since a bot whose owner is deleted never authenticates (`resolveBotToken`).
 */
async function reapplyDeletion(store: EventStore, userId: string, appendTo: EventStore = store): Promise<boolean> {
  const stream = `account-${userId}`;
  let state: AccountState | null = null;
  let revision = -1;
  for (const e of await store.readStream(stream)) {
    state = evolveAccount(state, upcast(e), e.revision) ?? state;
    revision = e.revision;
  }
  if (!state || state.deleted || revision < 0) return false;
  const writes: StreamWrite[] = accountDeletionWrites(state, []).map((w) => ({
    stream: w.stream,
    expected: w.expected,
    events: w.events.map((ev) => ({
      id: randomUUID(),
      type: ev.type,
      data: ev.data,
      metadata: { actor: null, requestId: `restore-${userId}`.slice(0, 64), at: new Date().toISOString(), scope: w.scope },
    })),
  }));
  await appendTo.appendMany(writes);
  return true;
}
