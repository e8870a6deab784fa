/**
 * Presence (Revolt's `online`): a user is online while some API process holds a WebSocket of theirs that
 * got its Ready. Presence is not history, so it lives in Redis only, next to the read models:
 *
 * - each API process registers itself in `presence:procs` (scored by when its registration expires, renewed
 *   every third of `ttlMs`) and lists the users it holds sockets of in `presence:proc:<id>`;
 * - `presence:users` counts, per user, the processes holding them: 0 → 1 is "came online", 1 → 0 "went
 *   offline". Each change runs as one Lua script that also appends `UserUpdate {online}` to the presence
 *   stream, so the order of the events is the order of the changes whatever the processes do;
 * - a process that dies stops renewing; the next heartbeat of any other process drops its registration and
 *   its users go offline (unless another process holds them). A process that finds its own registration gone
 *   (Redis flushed, or it was taken for dead during a long pause) registers again with every user it holds.
 *
 * Every API process reads the presence stream with the client events and delivers the changes like any
 * `userPresence` event: to the user's sockets and to the sockets of everyone sharing a server with them.
 */
import type { RedisClient } from '../redis.ts';
import type { Logger } from 'pino';
import { controlKeys } from '../readmodel/keys.ts';

/** Presence changes kept in the stream (approximately): readers only ever need the newest. */
const STREAM_MAXLEN = '10000';

/** Appends `UserUpdate {online}` for a user to the stream `KEYS[3]` (`ARGV[2]`: stream length kept). */
const PUBLISH = `
local function publish(user, online)
  local u = cjson.encode(user)
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[2], '*', 'e',
    '{"route":{"kind":"userPresence","userId":' .. u .. '},"payload":{"type":"UserUpdate","id":' .. u ..
    ',"data":{"online":' .. online .. '},"clear":[]}}')
end
`;

/** KEYS: process hash, users hash, stream. ARGV: user, stream length. */
const JOIN = `${PUBLISH}
if redis.call('HSETNX', KEYS[1], ARGV[1], 1) == 1 and redis.call('HINCRBY', KEYS[2], ARGV[1], 1) == 1 then
  publish(ARGV[1], 'true')
end
return 1`;

/** KEYS: process hash, users hash, stream. ARGV: user, stream length. */
const LEAVE = `${PUBLISH}
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then
  if redis.call('HINCRBY', KEYS[2], ARGV[1], -1) <= 0 then
    redis.call('HDEL', KEYS[2], ARGV[1])
    publish(ARGV[1], 'false')
  end
end
return 1`;

/**
 * Drops processes: the one named in ARGV[4], or else those whose registration expired before ARGV[1].
 * KEYS: processes zset, users hash, stream. ARGV: now, stream length, process hash key prefix, process id or ''.
 */
const DROP = `${PUBLISH}
local function drop(pid)
  redis.call('ZREM', KEYS[1], pid)
  local key = ARGV[3] .. pid
  for _, user in ipairs(redis.call('HKEYS', key)) do
    if redis.call('HINCRBY', KEYS[2], user, -1) <= 0 then
      redis.call('HDEL', KEYS[2], user)
      publish(user, 'false')
    end
  end
  redis.call('DEL', key)
end
if ARGV[4] ~= '' then
  drop(ARGV[4])
  return 1
end
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 16)
for _, pid in ipairs(dead) do drop(pid) end
return #dead`;

/** KEYS: processes zset, process hash. ARGV: process id, expiry. → [was registered (0/1), users listed]. */
const RENEW = `
local had = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return {had and 1 or 0, redis.call('HLEN', KEYS[2])}`;

/** Options of the tracker. */
export interface PresenceOptions {
  redis: RedisClient;
  prefix: string;
  /** This process's id (unique per process start). */
  processId: string;
  /** How long a registration lives without renewal (ms); renewed every third of it. */
  ttlMs: number;
  now: () => number;
  log: Logger;
}

/** The users whose sockets this process holds, kept in step with Redis. */
export class PresenceTracker {
  private readonly local = new Map<string, number>();
  private readonly keys: ReturnType<typeof controlKeys>;
  private readonly ownKey: string;
  private chain: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: PresenceOptions) {
    this.keys = controlKeys(o.prefix);
    this.ownKey = this.keys.presenceProcess(o.processId);
  }

  /** Registers the process and starts renewing it (and dropping dead processes). */
  async start(): Promise<void> {
    await this.enqueue(() => this.tick());
    this.timer = setInterval(() => void this.enqueue(() => this.tick()), Math.max(50, Math.floor(this.o.ttlMs / 3)));
    this.timer.unref();
  }

  /** A socket of `userId` got its Ready. */
  connected(userId: string): void {
    const n = (this.local.get(userId) ?? 0) + 1;
    this.local.set(userId, n);
    if (n === 1) void this.enqueue(() => this.run(JOIN, userId));
  }

  /** A socket counted by `connected` closed. */
  disconnected(userId: string): void {
    const n = (this.local.get(userId) ?? 0) - 1;
    if (n > 0) return void this.local.set(userId, n);
    this.local.delete(userId);
    void this.enqueue(() => this.run(LEAVE, userId));
  }

  /** Stops renewing and takes the process's users offline (unless another process holds them). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.local.clear();
    await this.enqueue(() => this.drop(this.o.processId));
  }

  /** Runs Redis work one at a time, in call order; a failure is logged (the next renewal repairs it). */
  private enqueue(task: () => Promise<unknown>): Promise<unknown> {
    this.chain = this.chain.then(task).catch((err: unknown) => this.o.log.warn({ err }, 'presence: redis work failed'));
    return this.chain;
  }

  private run(script: string, userId: string): Promise<unknown> {
    return this.o.redis.eval(script, 3, this.ownKey, this.keys.presenceUsers, this.keys.presenceEvents, userId, STREAM_MAXLEN);
  }

  private drop(processId: string): Promise<unknown> {
    const k = this.keys;
    return this.o.redis.eval(DROP, 3, k.presenceProcesses, k.presenceUsers, k.presenceEvents, String(this.o.now()), STREAM_MAXLEN, k.presenceProcess(''), processId);
  }

  /**
   * Renews the registration; when it was gone or Redis lists other users than this process holds, brings
   * Redis back in step. Then drops the processes whose registration expired.
   */
  private async tick(): Promise<void> {
    const [had, listed] = (await this.o.redis.eval(RENEW, 2, this.keys.presenceProcesses, this.ownKey, this.o.processId, String(this.o.now() + this.o.ttlMs))) as [number, number];
    if (!had || listed !== this.local.size) {
      const inRedis = new Set(await this.o.redis.hkeys(this.ownKey));
      for (const user of this.local.keys()) if (!inRedis.has(user)) await this.run(JOIN, user);
      for (const user of inRedis) if (!this.local.has(user)) await this.run(LEAVE, user);
    }
    await this.drop('');
  }
}
