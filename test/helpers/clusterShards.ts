/**
 * Helpers of the sharded-read-model cluster tests (test/redis.cluster.spread.test.ts, test/redis.cluster.reshard
 * .test.ts): a server with many channels, many sends, the history of a channel, the masters of a test cluster.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { TestUser } from './http.ts';
import { createServer } from './servers.ts';
import type { TestCluster } from './redisCluster.ts';

/** Every message id of a channel, oldest first (pages of 100). */
export async function history(user: TestUser, channel: string): Promise<string[]> {
  const ids: string[] = [];
  let after: string | undefined;
  for (;;) {
    const r = await user.api.get(`/channels/${channel}/messages?limit=100&sort=Oldest${after ? `&after=${after}` : ''}`);
    if (r.status !== 200) throw new Error(`history ${r.status} ${r.text}`);
    const page = r.body as Array<{ _id: string }>;
    ids.push(...page.map((m) => m._id));
    if (page.length < 100) return ids;
    after = page[page.length - 1]!._id;
  }
}

/** A server with `n` text channels (its `general` and n - 1 more). */
export async function serverWithChannels(owner: TestUser, n: number): Promise<{ id: string; channels: string[] }> {
  const srv = await createServer(owner, 'Spread');
  const channels = [srv.general];
  while (channels.length < n) {
    const r = await owner.api.post(`/servers/${srv.id}/channels`, { name: `c${channels.length}` });
    if (r.status !== 200) throw new Error(`channel: ${r.status} ${r.text}`);
    channels.push(r.body._id as string);
  }
  return { id: srv.id, channels };
}

/** Sends `total` messages round-robin over `channels`, `parallel` at a time; the ids acknowledged (2xx), by channel. */
export async function sendMany(owner: TestUser, channels: string[], total: number, parallel: number, statuses: Map<number, number>): Promise<Map<string, string[]>> {
  const acked = new Map<string, string[]>(channels.map((c) => [c, []]));
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      for (let i = next++; i < total; i = next++) {
        const channel = channels[i % channels.length]!;
        const r = await owner.api.post(`/channels/${channel}/messages`, { content: `message ${i} ${'x'.repeat(200)}` });
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        if (r.status === 200) acked.get(channel)!.push(r.body._id as string);
        else if (r.status !== 503) throw new Error(`send: ${r.status} ${r.text}`);
      }
    }),
  );
  return acked;
}

/** Runs a command without blocking the event loop; its exit code and output. */
export function run(cmd: string, args: string[], ms = 300_000): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

/** The masters' ports and node ids. */
export function mastersOf(cluster: TestCluster): Array<{ port: number; id: string }> {
  const out = spawnSync('redis-cli', ['-p', String(cluster.nodes[0]!.port), 'CLUSTER', 'NODES'], { encoding: 'utf8' }).stdout;
  return out
    .trim()
    .split('\n')
    .map((l) => l.split(' '))
    .filter((f) => f[2]!.includes('master'))
    .map((f) => ({ id: f[0]!, port: Number(f[1]!.split(':')[1]!.split('@')[0]) }));
}

/**
 * Moves one slot to another master the way `redis-cli --cluster reshard` does, key by key (IMPORTING /
 * MIGRATING, MIGRATE in batches of 10, then SETSLOT NODE on every master), while the service keeps running.
 */
export async function moveSlot(cluster: TestCluster, slot: number, toPort: number): Promise<void> {
  const { Redis } = await import('ioredis');
  const masters = mastersOf(cluster);
  const any = new Redis({ host: '127.0.0.1', port: masters[0]!.port });
  try {
    const slots = (await any.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, string]]>;
    const owner = slots.find(([a, b]) => slot >= a && slot <= b)!;
    const src = masters.find((m) => m.port === Number(owner[2][1]))!;
    const dst = masters.find((m) => m.port === toPort)!;
    if (src.port === dst.port) return;
    const s = new Redis({ host: '127.0.0.1', port: src.port });
    const d = new Redis({ host: '127.0.0.1', port: dst.port });
    try {
      await d.call('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', src.id);
      await s.call('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', dst.id);
      for (;;) {
        const keys = (await s.call('CLUSTER', 'GETKEYSINSLOT', String(slot), '10')) as string[];
        if (keys.length === 0) break;
        await s.call('MIGRATE', '127.0.0.1', String(dst.port), '', '0', '5000', 'KEYS', ...keys);
        // One batch at a time, as redis-cli's pipeline: the service keeps writing between the batches.
        await new Promise((r) => setTimeout(r, 20));
      }
      for (const m of masters) {
        const c = new Redis({ host: '127.0.0.1', port: m.port });
        try {
          await c.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', dst.id);
        } finally {
          c.disconnect();
        }
      }
    } finally {
      s.disconnect();
      d.disconnect();
    }
  } finally {
    any.disconnect();
  }
}
