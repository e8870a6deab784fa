/**
 * The seeded history that `rebuild`, `history` and `memory` share, made once per run: an owner, a server and
 * three channels created through the API, then 1k, 100k and 1M MessageSent events appended straight into the
 * SQLite event store in bulk. A copy of the log is kept once the first two channels are in (about 100k
 * events: the rebuild-100k log). The read models of the whole log are then built by `npm run rebuild` into
 * a fresh prefix; that rebuild is the rebuild-1m figure, and `history` and `memory` read what it built.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import { newId } from '../src/ids.ts';
import type { NewEvent, StreamWrite } from '../src/eventstore/port.ts';
import type { BenchContext } from './lib.ts';
import { setupServer, signupUser, startServer, type BenchUser } from './http.ts';
import { deletePrefix } from '../test/helpers/service.ts';

/** Channel sizes seeded, in the order they are appended. */
export const CHANNEL_SIZES = [
  { label: '1k', count: 1_000 },
  { label: '100k', count: 100_000 },
  { label: '1m', count: 1_000_000 },
] as const;

/** The seeded event store. */
export interface SeededHistory {
  /** DATA_DIR of the whole log. */
  dataDir: string;
  /** Events in the whole log (setup events included). */
  events: number;
  /** DATA_DIR of the copy taken after the 1k and 100k channels. */
  smallDataDir: string;
  /** Events in that copy. */
  smallEvents: number;
  /** MessageSent events seeded in all. */
  messages: number;
  serverId: string;
  /** One channel per entry of CHANNEL_SIZES. */
  channels: string[];
  owner: BenchUser;
  /** About a thousand message ids of each channel, for `before` cursors. */
  samples: string[][];
}

/** One `npm run rebuild`, as the command reports it. */
export interface RebuildRun {
  events: number;
  /** Events/s printed by the command (the replay and the swap; not its counting pass for the progress bar). */
  rate: number;
  seconds: number;
}

/** The seeded history with read models of the whole log. */
export interface RebuiltHistory extends SeededHistory {
  /** REDIS_PREFIX holding the read models (dropped at the end of the run). */
  prefix: string;
  /** The rebuild that built them. */
  rebuild: RebuildRun;
}

/**
 * The text of the k-th message of a seeded channel: "Seeded message number <k>, of a typical length for a chat
 * line.", and every tenth (k ≡ 9 mod 10) in Japanese, which mentions 東京 (the search bench's non-Latin phrase).
 */
export function seededContent(k: number): string {
  return k % 10 === 9 ? `シード・メッセージ ${k} 番、東京から送りました。普通の長さのチャットです。` : `Seeded message number ${k}, of a typical length for a chat line.`;
}

/** Appends `count` MessageSent events to the store in bulk; returns a sample of the ids (for `before` cursors). */
async function seed(store: SqliteEventStore, serverId: string, channelId: string, author: string, count: number, start: number, log: (m: string) => void): Promise<string[]> {
  // One millisecond apart from `start` (the channels follow one another on one clock: a channel starting
  // before the previous one's last id would put its ids in that millisecond, from the monotonic id factory).
  const at = new Date().toISOString();
  const sample: string[] = [];
  const every = Math.max(1, Math.floor(count / 1000));
  const BATCH = 5_000;
  for (let i = 0; i < count; i += BATCH) {
    const writes: StreamWrite[] = [];
    for (let k = i; k < Math.min(count, i + BATCH); k++) {
      const id = newId(start + k);
      if (k % every === 0) sample.push(id);
      const event: NewEvent = {
        id: randomUUID(),
        type: 'MessageSent',
        data: { message: { _id: id, nonce: id, channel: channelId, author, content: seededContent(k) } },
        metadata: { actor: author, requestId: 'bench-seed', at, scope: serverId },
      };
      writes.push({ stream: `message-${id}`, expected: 'no_stream', events: [event] });
    }
    await store.appendMany(writes);
    if ((i / BATCH) % 40 === 0 && count > 100_000) log(`  seeded ${i + writes.length} / ${count}`);
  }
  return sample;
}

async function makeSeeded(ctx: BenchContext): Promise<SeededHistory> {
  const dataDir = path.join(ctx.sharedDir, 'history');
  const smallDataDir = path.join(ctx.sharedDir, 'history-100k');
  const file = path.join(dataDir, 'events.sqlite');
  // 1. Accounts, a server and the channels through the API.
  const setupPrefix = `bench:seed:${randomBytes(4).toString('hex')}:`;
  const svc = await startServer('service', { ROLES: 'api,projector', RATE_LIMITS: 'off', API_PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, REDIS_URL: ctx.redisUrl, REDIS_PREFIX: setupPrefix });
  let owner: BenchUser;
  let made: { serverId: string; channels: string[] };
  try {
    owner = await signupUser(svc.urls.apiUrl!);
    made = await setupServer(svc.urls.apiUrl!, owner, CHANNEL_SIZES.length, []);
  } finally {
    await svc.stop();
    await deletePrefix(ctx.redisUrl, setupPrefix);
  }

  // 2. The messages straight into the event store; the log is copied after the channel of 100k.
  const t0 = Date.now();
  let store = new SqliteEventStore(file);
  const samples: string[][] = [];
  let smallEvents = 0;
  let start = Date.now() - CHANNEL_SIZES.reduce((n, s) => n + s.count, 0);
  for (let i = 0; i < CHANNEL_SIZES.length; i++) {
    samples.push(await seed(store, made.serverId, made.channels[i]!, owner.userId, CHANNEL_SIZES[i]!.count, start, ctx.log));
    start += CHANNEL_SIZES[i]!.count;
    if (CHANNEL_SIZES[i]!.label === '100k') {
      smallEvents = Number(await store.headPosition());
      // Closing the last connection checkpoints the WAL into the file, so the file alone is the whole log.
      await store.close();
      fs.mkdirSync(smallDataDir, { recursive: true });
      fs.copyFileSync(file, path.join(smallDataDir, 'events.sqlite'));
      store = new SqliteEventStore(file);
    }
  }
  const events = Number(await store.headPosition());
  await store.close();
  const messages = CHANNEL_SIZES.reduce((n, s) => n + s.count, 0);
  ctx.log(`seeded ${messages.toLocaleString('en-US')} messages in ${((Date.now() - t0) / 1000).toFixed(1)} s (${events.toLocaleString('en-US')} events; ${smallEvents.toLocaleString('en-US')} in the copy)`);
  return { dataDir, events, smallDataDir, smallEvents, messages, serverId: made.serverId, channels: made.channels, owner, samples };
}

async function makeRebuilt(ctx: BenchContext): Promise<RebuiltHistory> {
  const seeded = await seededHistory(ctx);
  const prefix = `bench:history:${randomBytes(4).toString('hex')}:`;
  ctx.atEnd(() => deletePrefix(ctx.redisUrl, prefix));
  const rebuild = await runRebuild(seeded.dataDir, ctx.redisUrl, prefix);
  ctx.log(`npm run rebuild: ${rebuild.events.toLocaleString('en-US')} events in ${rebuild.seconds} s, ${rebuild.rate.toLocaleString('en-US')} events/s (read models of history and memory)`);
  if (rebuild.events !== seeded.events) throw new Error(`the rebuild replayed ${rebuild.events} events of ${seeded.events}`);
  return { ...seeded, prefix, rebuild };
}

// One fixture per run (keyed by the run's shared directory).
const seededRuns = new Map<string, Promise<SeededHistory>>();
const rebuiltRuns = new Map<string, Promise<RebuiltHistory>>();

/** The seeded event store of this run (made by the first caller). */
export function seededHistory(ctx: BenchContext): Promise<SeededHistory> {
  let p = seededRuns.get(ctx.sharedDir);
  if (!p) seededRuns.set(ctx.sharedDir, (p = makeSeeded(ctx)));
  return p;
}

/** The seeded event store with read models of the whole log, built by `npm run rebuild` (made by the first caller). */
export function rebuiltHistory(ctx: BenchContext): Promise<RebuiltHistory> {
  let p = rebuiltRuns.get(ctx.sharedDir);
  if (!p) rebuiltRuns.set(ctx.sharedDir, (p = makeRebuilt(ctx)));
  return p;
}

/**
 * Runs the command behind `npm run rebuild` (src/cli/rebuild.ts, in a process of its own) on the SQLite log
 * in `dataDir` into `prefix`, and returns what it reports.
 */
export function runRebuild(dataDir: string, redisUrl: string, prefix: string): Promise<RebuildRun> {
  const root = path.join(import.meta.dirname, '..');
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'error', DATA_DIR: dataDir, REDIS_URL: redisUrl, REDIS_PREFIX: prefix };
  delete env.EVENTSTORE_URL;
  // BENCH_NODE_ARGS (as for the service processes, bench/http.ts): e.g. `--cpu-prof` to profile the rebuild.
  const extra = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...extra, '--import', 'tsx', 'src/cli/rebuild.ts'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      const m = /rebuilt (\d+) events .* in ([\d.]+) s, (\d+) events\/s/.exec(out);
      if (code !== 0 || !m) return reject(new Error(`npm run rebuild exited with ${code}: ${out.slice(-1000)} ${err}`));
      resolve({ events: Number(m[1]), seconds: Number(m[2]), rate: Number(m[3]) });
    });
  });
}

/** Requests of one reader of channel `i`: the newest page and a page `before` a sampled message, alternately. */
export function pageReader(h: SeededHistory, i: number): () => { path: string; headers: Record<string, string> } {
  let n = 0;
  const sample = h.samples[i]!;
  return () => {
    n++;
    const before = n % 2 === 0 ? `&before=${sample[(n * 7919) % sample.length]}` : '';
    return { path: `/channels/${h.channels[i]}/messages?limit=100${before}`, headers: { 'X-Session-Token': h.owner.token } };
  };
}
