/**
 * `postgres`: the PostgreSQL event store, in a database of its own on the same server
 * (`BENCH_POSTGRES_URL`, default postgres://postgres@127.0.0.1:5432/postgres as admin), against raw inserts
 * into that same Postgres measured in the same run:
 * - appends/s with 1 writer vs raw single-row INSERT commits (bigserial, synchronous_commit=on);
 * - appends/s with 50 writers vs 50 connections doing raw single-row INSERT commits concurrently (no
 *   ordering guarantee: their sequence numbers can commit out of order — exactly what the store's
 *   serialised, gapless positions pay for; group commit wins some of it back);
 * - subscription lag (append issued → delivered to a subscriber on another pool, woken by NOTIFY) vs a raw
 *   committed INSERT that notifies, received by LISTEN on another connection.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openPostgresEventStore } from '../src/eventstore/postgres.ts';
import type { NewEvent, RecordedEvent } from '../src/eventstore/port.ts';
import { median, repeat, type Bench } from './lib.ts';

const ADMIN = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const meta = { actor: '01J0000000000000000000000A', requestId: 'bench', at: '2026-01-01T00:00:00.000Z', scope: '01J0000000000000000000000B' };
const event = (i: number): NewEvent => ({ id: crypto.randomUUID(), type: 'MessageSent', data: { i, content: 'x'.repeat(200) }, metadata: meta });

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: ADMIN });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

async function freshDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `stoat_bench_${randomBytes(5).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const u = new URL(ADMIN);
  u.pathname = `/${name}`;
  return { url: u.toString(), drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined) };
}

async function storeAppends(url: string, total: number, writers: number): Promise<{ rate: number; commits: number }> {
  const store = await openPostgresEventStore(url);
  const per = Math.ceil(total / writers);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async (_, w) => {
      for (let r = 0; r < per; r++) await store.append(`w-${w}`, [event(r)], r === 0 ? 'no_stream' : r - 1);
    }),
  );
  const s = (performance.now() - t0) / 1000;
  const commits = store.stats().commits;
  await store.close();
  return { rate: (per * writers) / s, commits };
}

async function rawInserts(url: string, total: number, connections: number): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: connections, options: '-c synchronous_commit=on' });
  await pool.query('CREATE TABLE IF NOT EXISTS raw (position bigserial PRIMARY KEY, id text, stream text, revision int, type text, data json, metadata json, UNIQUE (stream, revision))');
  await pool.query('TRUNCATE raw');
  const per = Math.ceil(total / connections);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async (_, w) => {
      for (let r = 0; r < per; r++) {
        const e = event(r);
        await pool.query('INSERT INTO raw (id, stream, revision, type, data, metadata) VALUES ($1, $2, $3, $4, $5, $6)', [e.id, `w-${w}`, r, e.type, JSON.stringify(e.data), JSON.stringify(e.metadata)]);
      }
    }),
  );
  const s = (performance.now() - t0) / 1000;
  await pool.end();
  return (per * connections) / s;
}

async function subscriptionLag(url: string, n: number): Promise<number[]> {
  const writer = await openPostgresEventStore(url);
  const reader = await openPostgresEventStore(url, { pollIntervalMs: 1000 });
  const sent = new Map<string, number>();
  const lags: number[] = [];
  let caught!: () => void;
  const caughtUp = new Promise<void>((r) => (caught = r));
  let next: (() => void) | undefined;
  const sub = reader.subscribe({
    after: await writer.headPosition(),
    onCaughtUp: () => caught(),
    onEvents: (events: RecordedEvent[]) => {
      for (const e of events) {
        const t = sent.get(e.id);
        if (t !== undefined) lags.push(performance.now() - t);
      }
      next?.();
    },
  });
  await caughtUp;
  for (let i = 0; i < n; i++) {
    const e = event(i);
    const delivered = new Promise<void>((r) => (next = r));
    sent.set(e.id, performance.now());
    await writer.append('lag', [e], 'any');
    await delivered;
  }
  await sub.close();
  await writer.close();
  await reader.close();
  return lags;
}

async function notifyRoundTrip(url: string, n: number): Promise<number[]> {
  const a = new pg.Client({ connectionString: url });
  const b = new pg.Client({ connectionString: url });
  await a.connect();
  await b.connect();
  await b.query('LISTEN bench_rt');
  await a.query('CREATE TABLE IF NOT EXISTS raw_rt (position bigserial PRIMARY KEY, id text, data json)');
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const got = new Promise<void>((r) => b.once('notification', () => r()));
    const t0 = performance.now();
    // A raw committed INSERT that notifies, received on another connection: the same work minus the store.
    await a.query(`WITH ins AS (INSERT INTO raw_rt (id, data) VALUES ($1, $2) RETURNING 1) SELECT pg_notify('bench_rt', $1), (SELECT count(*) FROM ins)`, [crypto.randomUUID(), JSON.stringify(event(i).data)]);
    await got;
    out.push(performance.now() - t0);
  }
  await a.end();
  await b.end();
  return out;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

const bench: Bench = {
  name: 'postgres',
  description: 'PostgreSQL event store: appends/s (1 and 50 writers) and subscription lag vs raw inserts / NOTIFY on the same server',
  async run(ctx) {
    const n1 = ctx.quick ? 300 : 1000;
    const n50 = ctx.quick ? 2000 : 8000;
    const nLag = ctx.quick ? 100 : 300;
    const db = await freshDatabase();
    try {
      const one = await repeat(ctx.repeats, async () => (await storeAppends(`${db.url}?schema=b${randomBytes(3).toString('hex')}`, n1, 1)).rate);
      const raw1 = await repeat(ctx.repeats, () => rawInserts(db.url, n1, 1));
      let commits = 0;
      const fifty = await repeat(ctx.repeats, async () => {
        const r = await storeAppends(`${db.url}?schema=b${randomBytes(3).toString('hex')}`, n50, 50);
        commits = r.commits;
        return r.rate;
      });
      const raw50 = await repeat(ctx.repeats, () => rawInserts(db.url, n50, 50));
      const lags = await subscriptionLag(db.url, nLag);
      const rts = await notifyRoundTrip(db.url, nLag);
      ctx.log(`50 writers: ${n50} appends in ${commits} transactions (last run)`);
      return [
        { name: 'pg-append-1', figure: 'appends/s, 1 writer', median: median(one), unit: '/s', ceiling: median(raw1), ceilingLabel: 'raw INSERT, 1 row per commit', ratio: median(one) / median(raw1) },
        {
          name: 'pg-append-50',
          figure: 'appends/s, 50 writers',
          median: median(fifty),
          unit: '/s',
          ceiling: median(raw50),
          ceilingLabel: 'raw INSERT from 50 connections, 1 row per commit, unordered',
          ratio: median(fifty) / median(raw50),
          notes: `appends are serialised for a gapless global order; group commit wrote ${n50} appends in ${commits} transactions in the last run`,
        },
        {
          name: 'pg-sub-lag',
          figure: 'subscription lag, append issued → delivered on another pool (ms)',
          median: median(lags),
          unit: 'ms',
          p50: pct(lags, 50),
          p99: pct(lags, 99),
          ceiling: median(rts),
          ceilingLabel: 'raw INSERT+NOTIFY commit → LISTEN on another connection',
          ratio: median(rts) / median(lags),
        },
      ];
    } finally {
      await db.drop();
    }
  },
};
export default bench;
