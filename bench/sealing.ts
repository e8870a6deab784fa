/**
 * `sealing`: what per-channel content sealing (issue 39 part 1: `src/personal/`, CONTENT_FIELDS) costs
 * concurrent appends. Alternating rounds, in one run, of 50 writers appending `MessageSent` events (200
 * characters of content, 10 channels, one new `message-<id>` stream each, as a send does) to the SQLite event
 * store, plain (the ceiling) and through the personal-data boundary with its SQLite key store (the figure):
 * median rates, their ratio, and CPU per append of each (process CPU: the store's writer included).
 *
 * A second row isolates `seal()`, CPU per call, beside the seal as it was before its IVs came from a pool:
 * `randomBytes(12)` per call (a copy of the old code, below), measured in the same run.
 */
import { createCipheriv, randomBytes } from 'node:crypto';
import path from 'node:path';
import { monotonicFactory } from 'ulid';
import type { EventStore, NewEvent } from '../src/eventstore/port.ts';
import { SqliteEventStore } from '../src/eventstore/sqlite.ts';
import { seal } from '../src/personal/cipher.ts';
import { SqliteKeyStore } from '../src/personal/keyStore.ts';
import { PersonalDataStore } from '../src/personal/store.ts';
import { median, type Bench } from './lib.ts';

const ulid = monotonicFactory();
const WRITERS = 50;

/** One round: `total` appends by 50 writers into a fresh store; appends/s and µs of process CPU per append. */
async function round(dir: string, sealed: boolean, total: number): Promise<{ rate: number; cpuUs: number }> {
  const inner = new SqliteEventStore(path.join(dir, 'events.sqlite'));
  const store: EventStore = sealed ? new PersonalDataStore(inner, new SqliteKeyStore(path.join(dir, 'keys.sqlite'))) : inner;
  const channels = Array.from({ length: 10 }, () => ulid());
  const author = ulid();
  const event = (id: string, i: number): NewEvent => ({
    id: crypto.randomUUID(),
    type: 'MessageSent',
    data: { message: { _id: id, channel: channels[i % channels.length], author, content: `message ${i} `.padEnd(200, 'x') } },
    metadata: { actor: author, requestId: 'bench', at: new Date().toISOString(), scope: channels[0]! },
  });
  // The writer starts with the first append, and each channel's bucket key is created once: a running service
  // pays both once, not per message.
  for (let i = 0; i < channels.length; i++) {
    const id = ulid();
    await store.append(`message-${id}`, [event(id, i)], 'no_stream');
  }
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      for (let i = next++; i < total; i = next++) {
        const id = ulid();
        await store.append(`message-${id}`, [event(id, i)], 'no_stream');
      }
    }),
  );
  const s = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await store.close();
  return { rate: total / s, cpuUs: (cpu.user + cpu.system) / total };
}

/** The seal before its IVs came from a pool (cipher.ts until this bench): `randomBytes(12)` per call. */
function sealBefore(key: Buffer, subject: string, field: string, value: unknown): { $pd: 1; c: string } {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(`${subject}\u0000${field}`, 'utf8'));
  const ct = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return { $pd: 1, c: Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64url') };
}

/** µs of CPU per call of `fn` over `n` calls (after a warm-up). */
function cpuPerCall(n: number, fn: () => unknown): number {
  for (let i = 0; i < Math.min(n, 5_000); i++) fn();
  const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) fn();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
}

const bench: Bench = {
  name: 'sealing',
  description: 'appends/s with content sealing vs without (alternating rounds, 50 writers), CPU per append; seal() CPU before/after the IV pool',
  async run(ctx) {
    const total = ctx.quick ? 2_000 : 8_000;
    const rounds = ctx.quick ? 2 : Math.max(3, ctx.repeats + 2);
    const plain: Array<{ rate: number; cpuUs: number }> = [];
    const sealed: Array<{ rate: number; cpuUs: number }> = [];
    for (let r = 0; r < rounds; r++) {
      // Alternate which goes first, so a load change during the run falls on both.
      for (const s of r % 2 === 0 ? [false, true] : [true, false]) {
        const res = await round(path.join(ctx.tmpDir, `r${r}-${s ? 'sealed' : 'plain'}`), s, total);
        (s ? sealed : plain).push(res);
        ctx.log(`round ${r + 1} ${s ? 'sealed' : 'plain '}: ${Math.round(res.rate)} appends/s, ${res.cpuUs.toFixed(1)} µs CPU/append`);
      }
    }
    const rate = { plain: median(plain.map((x) => x.rate)), sealed: median(sealed.map((x) => x.rate)) };
    const cpu = { plain: median(plain.map((x) => x.cpuUs)), sealed: median(sealed.map((x) => x.cpuUs)) };

    const key = randomBytes(32);
    const subject = `content:${ulid()}:000000000000000:86400000`;
    const value = 'x'.repeat(200);
    const n = ctx.quick ? 20_000 : 100_000;
    const now: number[] = [];
    const before: number[] = [];
    for (let i = 0; i < ctx.repeats; i++) {
      before.push(cpuPerCall(n, () => sealBefore(key, subject, 'message.content', value)));
      now.push(cpuPerCall(n, () => seal(key, subject, 'message.content', value)));
    }
    return [
      {
        name: 'sealing',
        figure: `appends/s with content sealed, ${WRITERS} writers`,
        median: rate.sealed,
        unit: '/s',
        ceiling: rate.plain,
        ceilingLabel: 'the same appends unsealed, alternating rounds',
        ratio: rate.sealed / rate.plain,
        notes:
          `${rounds} rounds of ${total} appends each way; CPU per append ${cpu.sealed.toFixed(1)} µs sealed vs ${cpu.plain.toFixed(1)} µs plain ` +
          `(+${(cpu.sealed - cpu.plain).toFixed(1)} µs, ×${(cpu.sealed / cpu.plain).toFixed(2)}); rates sealed ${sealed.map((x) => Math.round(x.rate)).join(', ')}, plain ${plain.map((x) => Math.round(x.rate)).join(', ')}`,
      },
      {
        name: 'seal-iv',
        figure: 'seal() of 200 characters, µs CPU per call',
        median: median(now),
        unit: 'µs',
        ceiling: median(before),
        ceilingLabel: 'the seal before the IV pool (randomBytes(12) per call)',
        ratio: median(before) / median(now),
        notes: `IVs from a 6 KiB pool of the CSPRNG instead of a randomBytes call per seal: ${median(before).toFixed(2)} → ${median(now).toFixed(2)} µs CPU per seal`,
      },
    ];
  },
};
export default bench;
