/** Helpers for server tests: create a server, bring users in through an invite, dump read models. */
import { scanKeys, type RedisClient as Redis } from '../../src/redis.ts';
import { createLogger } from '../../src/log.ts';
import type { EventStore } from '../../src/eventstore/port.ts';
import { controlKeys, generationPrefix } from '../../src/readmodel/keys.ts';
import { rebuild } from '../../projections/rebuild.ts';
import { openConfiguredKeyStore } from '../../src/personal/keyStore.ts';
import { PersonalDataStore } from '../../src/personal/store.ts';
import { PROJECTIONS } from '../../projections/index.ts';
import type { TestUser } from './http.ts';
import { deletePrefix, uniquePrefix, type Teardownable } from './service.ts';

/** A created server: its id and the id of its "General" channel. */
export interface TestServer {
  id: string;
  general: string;
}

/** Creates a server owned by `owner`. */
export async function createServer(owner: TestUser, name = 'Test server'): Promise<TestServer> {
  const r = await owner.api.post('/servers/create', { name });
  if (r.status !== 200) throw new Error(`server create ${r.status} ${r.text}`);
  return { id: r.body.server._id, general: r.body.channels[0]._id };
}

/** Makes each user a member through an invite created by `owner` in `channel`. */
export async function join(owner: TestUser, channel: string, ...users: TestUser[]): Promise<string> {
  const invite = await owner.api.post(`/channels/${channel}/invites`);
  if (invite.status !== 200) throw new Error(`invite create ${invite.status} ${invite.text}`);
  for (const u of users) {
    const r = await u.api.post(`/invites/${invite.body._id}`);
    if (r.status !== 200) throw new Error(`invite join ${r.status} ${r.text}`);
  }
  return invite.body._id as string;
}

/** Creates a role with these permissions and gives it to the users; returns its id. */
export async function roleWith(owner: TestUser, serverId: string, allow: bigint, users: TestUser[] = [], name = 'role'): Promise<string> {
  const r = await owner.api.post(`/servers/${serverId}/roles`, { name });
  if (r.status !== 200) throw new Error(`role create ${r.status} ${r.text}`);
  const id = r.body.id as string;
  const p = await owner.api.put(`/servers/${serverId}/permissions/${id}`, { permissions: { allow: allow.toString(), deny: 0 } });
  if (p.status !== 200) throw new Error(`role permissions ${p.status} ${p.text}`);
  for (const u of users) {
    const m = await owner.api.get(`/servers/${serverId}/members/${u.userId}`);
    const roles = [...(m.body.roles ?? []), id];
    const e = await owner.api.patch(`/servers/${serverId}/members/${u.userId}`, { roles });
    if (e.status !== 200) throw new Error(`assign role ${e.status} ${e.text}`);
  }
  return id;
}

/**
 * Every read-model key of a generation (bookkeeping keys `cp:` and `ready:` left out), with its value in a
 * comparable form: strings parsed as JSON, hashes as sorted objects of parsed JSON, sets sorted, sorted sets
 * as their members and scores in order.
 */
export async function dumpGeneration(redis: Redis, generationPrefix: string): Promise<Record<string, unknown>> {
  const keys: Array<[string, string]> = [];
  await scanKeys(redis, `${generationPrefix}*`, async (batch) => void keys.push(...batch.map((k): [string, string] => [k.slice(generationPrefix.length), k])));
  // The generation's shards (`<prefix>{g<N>.<s>}:`, src/readmodel/keys.ts): their keys by logical name too.
  const base = `${generationPrefix.slice(0, -2)}.`;
  await scanKeys(redis, `${base}*`, async (batch) => void keys.push(...batch.map((k): [string, string] => [k.slice(k.indexOf('}:', base.length) + 2), k])));
  const out: Record<string, unknown> = {};
  for (const [key, full] of keys.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
    if (key.startsWith('cp:') || key.startsWith('cpe:') || key.startsWith('ready:') || key.startsWith('spread:') || key === 'store') continue;
    const type = await redis.type(full);
    if (type === 'string') out[key] = JSON.parse((await redis.get(full))!);
    else if (type === 'hash') {
      const h = await redis.hgetall(full);
      out[key] = Object.fromEntries(Object.keys(h).sort().map((f) => [f, JSON.parse(h[f]!)]));
    } else if (type === 'set') out[key] = (await redis.smembers(full)).sort();
    else if (type === 'zset') out[key] = await redis.zrange(full, '0', '-1', 'WITHSCORES');
    else out[key] = `<${type}>`;
  }
  return out;
}

/** `dumpGeneration` of the generation `prefix` serves now. */
export async function dumpCurrent(redis: Redis, prefix: string): Promise<Record<string, unknown>> {
  return dumpGeneration(redis, generationPrefix(prefix, Number(await redis.get(controlKeys(prefix).generation))));
}

/**
 * Replays the whole log of `store` into a fresh prefix (deleted at teardown), without touching `prefix`'s
 * live generation, and returns its dump: what the read models must equal.
 */
export async function dumpRebuild(
  t: Teardownable,
  redis: Redis,
  o: { store: EventStore; redisUrl: string; prefix: string; partitions: number; dataDir?: string; eventStoreUrl?: string },
): Promise<Record<string, unknown>> {
  const target = uniquePrefix();
  t.teardown(() => deletePrefix(o.redisUrl, target));
  // A raw store (opened by a test after its service processes stopped) reads personal fields sealed: open them
  // with the service's key store, as the service does.
  let store = o.store;
  if (o.dataDir !== undefined) {
    const keys = await openConfiguredKeyStore({ dataDir: o.dataDir, eventStoreUrl: o.eventStoreUrl, keyStoreUrl: undefined });
    t.teardown(() => keys.close());
    store = new PersonalDataStore(o.store, keys);
  }
  const r = await rebuild({ store, redisUrl: o.redisUrl, prefix: o.prefix, partitions: o.partitions, targetPrefix: target, projections: PROJECTIONS, log: createLogger('silent'), swap: false });
  return dumpGeneration(redis, generationPrefix(target, r.generation));
}

/** The client events emitted so far (every partition's Redis stream), oldest first. */
export async function clientEvents(redis: Redis, prefix: string): Promise<Array<{ route: Record<string, string>; payload: Record<string, any> }>> {
  const keys: string[] = [];
  await scanKeys(redis, `${prefix}{live}:events:*`, async (batch) => void keys.push(...batch));
  const out: Array<{ id: string; route: Record<string, string>; payload: Record<string, any> }> = [];
  for (const key of keys) {
    for (const [id, fields] of await redis.xrange(key, '-', '+')) {
      const e = JSON.parse(fields[1]!) as { route: Record<string, string>; payload: Record<string, any> };
      out.push({ id, ...e });
    }
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map(({ route, payload }) => ({ route, payload }));
}
