/**
 * The events gateway (DESIGN §4 "events gateway"): a WebSocket endpoint on the API's HTTP server at `/ws`,
 * speaking Revolt's protocol version 1 in JSON.
 *
 * Connection: `?version=1&format=json&token=<session token>` authenticates at once; without `token` the
 * client sends `{"type":"Authenticate","token":…}`. A token that is not a live session gets
 * `Error {InvalidSession}` and the socket is closed. Then `Authenticated`, then `Ready`, then live events —
 * nothing else before Ready (client frames that arrive meanwhile are answered after it).
 *
 * Liveness: the gateway pings every socket each heartbeat interval and cuts a socket that did not answer
 * the previous ping; a socket whose unsent data passes the buffer limit is cut at once. Typing indicators
 * go through Redis pub/sub (they are not history), to the sockets that can see the channel on every
 * API process.
 *
 * `Subscribe {server_id}` marks a server active for the socket for 15 minutes, at most 5 at a time
 * (bonfire's `active_servers`, src/gateway/activeServers.ts): the profile changes (`UserUpdate`) of users who
 * only share a server with the socket's user reach it only while that server is active for it (bonfire's
 * `<server>u` member topic). Typing and presence (`UserUpdate {online}`) are not gated, as in bonfire (typing
 * goes to the channel's topic, presence to the server's); nor are the profile changes of the user, friends,
 * pending requests and DM/group peers. A bot's socket has every server active.
 */
import { policySource } from '../users/policy.ts';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { createRedis } from '../redis.ts';
import type { Logger } from 'pino';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { SessionRecord } from '../../projections/accounts.ts';
import { hashToken } from '../domain/account/secrets.ts';
import { resolveBotToken } from '../users/botToken.ts';
import { controlKeys, rm } from '../readmodel/keys.ts';
import type { ReadModels } from '../readmodel/reader.ts';
import { Hub } from './hub.ts';
import { ClientFrame, CLIENT_FRAME_TYPES, errorFrame, readyFields, type GatewayError, type ReadyField } from './protocol.ts';
import { readySettingsKeys } from './protocol.ts';
import { buildReady } from './ready.ts';
import { PresenceTracker } from './presence.ts';
import { GatewaySocket, type DropReason } from './socket.ts';
import { ClientEventReader } from './streams.ts';
import { requestAddress } from '../http/clientAddress.ts';
import type { Cidr } from '../outbound/policy.ts';
import { userFramesChannel, type UserFrame } from './userFrames.ts';
import { activeSlowmodes } from '../ratelimit/slowmode.ts';

/** The path of the WebSocket endpoint on the API server. */
export const GATEWAY_PATH = '/ws';

/** Options of the gateway. */
export interface GatewayOptions {
  /** The API's HTTP server (the gateway answers its upgrade requests). */
  server: Server;
  readModels: ReadModels;
  redisUrl: string;
  prefix: string;
  partitions: number;
  log: Logger;
  now: () => number;
  /** POLICY_CHANGES: the file of policy changes Ready shows (undefined: none). */
  policyChangesFile?: string | undefined;
  /** Interval of server pings (ms); a socket that has not answered the previous ping by the next is cut. */
  heartbeatMs: number;
  /** Unsent bytes a socket may have before it is cut as too slow. */
  maxBufferedBytes: number;
  /** How long a socket without `?token=` may take to send `Authenticate` (ms). */
  authTimeoutMs: number;
  /** How long a process's presence registration lives without renewal (ms): a dead process's users go offline after it. */
  presenceTtlMs: number;
  /** Sockets one user may hold on this process (default 16). */
  maxSocketsPerUser?: number;
  /** Sockets one client address may hold on this process (default 64). */
  maxSocketsPerAddress?: number;
  /** Proxies whose X-Forwarded-For names the client (TRUST_PROXY; default none: the socket's peer). */
  trustProxy?: readonly Cidr[];
}

/** A socket relays at most one BeginTyping per channel in this many ms (a repeat inside it is dropped). */
export const TYPING_REPEAT_MS = 2_000;
/** A socket relays at most this many typing frames per `TYPING_WINDOW_MS`, whatever the channels. */
export const TYPING_PER_WINDOW = 10;
/** Window of `TYPING_PER_WINDOW` (ms). */
export const TYPING_WINDOW_MS = 10_000;

/** Per-socket typing state: when each channel's BeginTyping was last relayed, and the window's count. */
interface TypingState {
  began: Map<string, number>;
  windowStart: number;
  count: number;
}

/** Counters for tests and diagnostics. */
export interface GatewayStats {
  /** Sockets open now. */
  readonly connections: number;
  /** Sockets dropped by the gateway, by reason. */
  readonly dropped: Readonly<Record<DropReason, number>>;
  /** Redis reads made by the permission facts cache. */
  readonly factLoads: number;
  /** Servers in the facts cache. */
  readonly cachedServers: number;
}

/** A running gateway. */
export interface Gateway {
  readonly stats: GatewayStats;
  /** Closes every socket (1001 going away), stops reading events and closes its Redis connections. */
  close(): Promise<void>;
}

/** A typing relay message on the pub/sub channel. */
interface TypingMessage {
  /** The channel's server; '' for a private channel. */
  server: string;
  channel: string;
  user: string;
  start: boolean;
}

/** Starts the gateway on the API server. */
export async function startGateway(o: GatewayOptions): Promise<Gateway> {
  const log = o.log.child({ part: 'gateway' });
  const typingChannel = `${controlKeys(o.prefix).controlChannel}:typing`;
  const dropped: Record<DropReason, number> = { slow: 0, dead: 0, logout: 0, shutdown: 0, auth: 0, overflow: 0, error: 0, limit: 0 };
  const hub = new Hub({ readModels: o.readModels, log, now: o.now, maxPending: 10_000 });
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024, perMessageDeflate: false });
  let closing = false;

  const presence = new PresenceTracker({ redis: o.readModels.redis, prefix: o.prefix, processId: randomUUID(), ttlMs: o.presenceTtlMs, now: o.now, log });
  await presence.start();

  /** A socket is gone: forget it, and count it out of its user's presence. */
  const forget = (s: GatewaySocket) => {
    hub.remove(s);
    if (s.present) {
      s.present = false;
      presence.disconnected(s.userId);
    }
  };

  const onDrop = (s: GatewaySocket, reason: DropReason) => {
    dropped[reason]++;
    if (reason !== 'shutdown') log.debug({ userId: s.userId || undefined, reason }, 'socket dropped');
    forget(s);
  };

  const reader = new ClientEventReader({
    redisUrl: o.redisUrl,
    prefix: o.prefix,
    partitions: o.partitions,
    log,
    onEvent: (event) => hub.enqueue(() => hub.dispatch(event)),
  });
  await reader.start();

  const typingSub = createRedis(o.redisUrl, { maxRetriesPerRequest: null, enableOfflineQueue: true, connectTimeout: 5000 });
  typingSub.on('error', (err) => log.debug({ err: err.message }, 'gateway typing subscriber: redis error'));
  const userChannel = userFramesChannel(o.prefix);
  typingSub.on('message', (channel: string, message: string) => {
    if (channel === userChannel) {
      let u: UserFrame;
      try {
        u = JSON.parse(message) as UserFrame;
      } catch {
        return;
      }
      for (const s of hub.socketsOf(u.user)) if (s.state === 'ready') s.send(u.frame);
      return;
    }
    if (channel !== typingChannel) return;
    let m: TypingMessage;
    try {
      m = JSON.parse(message) as TypingMessage;
    } catch {
      return;
    }
    const frame = { type: m.start ? 'ChannelStartTyping' : 'ChannelStopTyping', id: m.channel, user: m.user };
    // A private channel's typing (no server) goes to the sockets told about that channel.
    if (m.server === '') for (const s of hub.privateSubscribersOf(m.channel)) s.send(frame);
    else for (const s of hub.subscribersOf(m.server)) if (s.state === 'ready' && s.sees(m.server, m.channel)) s.send(frame);
  });
  await typingSub.subscribe(typingChannel, userChannel);

  /** Sends an error frame and closes the socket. */
  const fail = (s: GatewaySocket, error: GatewayError, reason: DropReason = 'auth') => {
    s.send(errorFrame(error));
    s.drop(reason, 1000, error.type);
  };

  /** Authenticates, sends Authenticated and Ready, and hands the socket over to live delivery. */
  const authenticate = async (s: GatewaySocket, token: string, fields: ReadonlySet<ReadyField>) => {
    s.state = 'preparing';
    // Queue events before reading anything: whatever Ready misses arrives after it.
    hub.startPreparing(s);
    try {
      // While the read models rebuild, a live session would look unknown: say so instead of InvalidSession
      // (which a client takes as a logout); the client reconnects with backoff.
      if (!(await o.readModels.serving())) return fail(s, { type: 'InternalError', at: 'Ready' }, 'error');
      // The fact cache catches up with every checkpoint now, so Ready is not older than the events queued.
      await o.readModels.fence();
      if (s.isClosed()) return;
      // A session token or a bot token (Stoat's bonfire takes either in the same field).
      let session = token.length <= 256 ? await o.readModels.getJson<SessionRecord>(rm.session(hashToken(token))) : null;
      if (!session && token.length <= 256) {
        const bot = await resolveBotToken({ readModels: o.readModels, now: o.now }, token);
        if (bot) {
          session = { sessionId: bot.sessionId, userId: bot.userId, name: 'bot', onboarded: true };
          s.bot = true;
        }
      }
      if (s.isClosed()) return;
      if (!session) return fail(s, { type: 'InvalidSession' });
      let mine = 0;
      for (const other of hub.sockets) if (other !== s && other.userId === session.userId && other.state !== 'closed') mine++;
      if (mine >= maxPerUser) return fail(s, { type: 'InternalError', at: 'SocketLimit' }, 'limit');
      s.userId = session.userId;
      s.sessionId = session.sessionId;
      // Bonfire follows Ready with the user's active slowmodes, when there are any (read beside Ready, not before it).
      const slowmodes = activeSlowmodes(o.readModels.redis, o.prefix, session.userId, o.now()).catch(() => []);
      const ready = await buildReady({ readModels: o.readModels, now: o.now, policyChanges: () => policySource(o.policyChangesFile, (m) => o.log.warn(m)).list() }, session.userId, fields, s.settingsKeys);
      if (s.isClosed()) return;
      if (!ready) return fail(s, { type: 'OnboardingNotFinished' });
      s.send({ type: 'Authenticated' });
      s.send(ready.frame);
      const active = await slowmodes;
      if (s.isClosed()) return;
      if (active.length > 0) s.send({ type: 'UserSlowmodes', slowmodes: active });
      await hub.activate(s, ready.visible, ready.privateChannels, ready.relations);
      if (!s.isClosed()) {
        s.present = true;
        presence.connected(s.userId);
      }
      const held = s.heldFrames;
      s.heldFrames = [];
      for (const raw of held) onFrame(s, raw);
    } catch (err) {
      log.warn({ err }, 'gateway: could not prepare a socket');
      fail(s, { type: 'InternalError', at: 'Ready' }, 'error');
    }
  };

  /** One frame from a client. */
  const onFrame = (s: GatewaySocket, raw: string) => {
    if (s.state === 'closed') return;
    if (s.state === 'preparing') {
      s.heldFrames.push(raw);
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch {
      s.send(errorFrame({ type: 'MalformedData', msg: 'frame is not JSON' }));
      return;
    }
    const type = (json as { type?: unknown } | null)?.type;
    if (typeof type !== 'string' || !CLIENT_FRAME_TYPES.has(type)) return;
    const parsed = ClientFrame.safeParse(json);
    if (!parsed.success) {
      s.send(errorFrame({ type: 'MalformedData', msg: `bad ${type} frame` }));
      return;
    }
    const f = parsed.data;
    if (s.state === 'unauthenticated') {
      // Before authentication only Authenticate counts (bonfire ignores everything else).
      if (f.type === 'Authenticate') void authenticate(s, f.token, s.fields);
      return;
    }
    switch (f.type) {
      case 'Authenticate':
        s.send(errorFrame({ type: 'AlreadyAuthenticated' }));
        return;
      case 'Ping':
        if (f.responded === undefined) s.send({ type: 'Pong', data: f.data });
        return;
      case 'BeginTyping':
      case 'EndTyping': {
        // Only a channel the socket can see: its server is the one whose visible set holds it.
        if (s.privateChannels.has(f.channel)) {
          const m: TypingMessage = { server: '', channel: f.channel, user: s.userId, start: f.type === 'BeginTyping' };
          void o.readModels.redis.publish(typingChannel, JSON.stringify(m)).catch(() => {});
          return;
        }
        for (const [serverId, channels] of s.servers) {
          if (!channels.has(f.channel)) continue;
          if (!typingAllowed(s, f.channel, f.type === 'BeginTyping')) return;
          const m: TypingMessage = { server: serverId, channel: f.channel, user: s.userId, start: f.type === 'BeginTyping' };
          void o.readModels.redis.publish(typingChannel, JSON.stringify(m)).catch(() => {});
          return;
        }
        return;
      }
      case 'Subscribe':
        // Bonfire marks the server active only for a member (here: a server the socket is subscribed to);
        // anything else is ignored, as bonfire does.
        if (s.servers.has(f.server_id)) s.active.subscribe(f.server_id, o.now());
        return;
      default:
        return;
    }
  };

  /**
   * Typing is throttled per socket (Stoat relays typing as ephemeral events and clients repeat BeginTyping
   * while typing): a BeginTyping for a channel already begun less than `TYPING_REPEAT_MS` ago is dropped, an
   * EndTyping only follows a relayed BeginTyping, and at most `TYPING_PER_WINDOW` frames per window pass.
   */
  const typingStates = new WeakMap<GatewaySocket, TypingState>();
  const typingAllowed = (s: GatewaySocket, channel: string, begin: boolean): boolean => {
    const now = o.now();
    let st = typingStates.get(s);
    if (!st) {
      st = { began: new Map(), windowStart: now, count: 0 };
      typingStates.set(s, st);
    }
    if (now - st.windowStart >= TYPING_WINDOW_MS) {
      st.windowStart = now;
      st.count = 0;
    }
    const last = st.began.get(channel);
    if (begin && last !== undefined && now - last < TYPING_REPEAT_MS) return false;
    if (!begin && last === undefined) return false;
    if (st.count >= TYPING_PER_WINDOW) return false;
    st.count += 1;
    if (begin) {
      if (st.began.size >= 64 && last === undefined) st.began.clear();
      st.began.set(channel, now);
    } else st.began.delete(channel);
    return true;
  };

  const maxPerUser = o.maxSocketsPerUser ?? 16;
  const maxPerAddress = o.maxSocketsPerAddress ?? 64;
  /** Open sockets per client address on this process. */
  const perAddress = new Map<string, number>();

  const onConnection = (ws: WebSocket, req: IncomingMessage) => {
    const s = new GatewaySocket(ws, o.maxBufferedBytes, onDrop);
    const address = requestAddress(req, o.trustProxy ?? []);
    ws.once('close', () => {
      const n = (perAddress.get(address) ?? 1) - 1;
      if (n <= 0) perAddress.delete(address);
      else perAddress.set(address, n);
    });
    hub.add(s);
    const params = new URL(req.url ?? '/', 'http://gateway').searchParams;
    s.fields = readyFields(params);
    s.settingsKeys = readySettingsKeys(params);
    ws.on('pong', () => (s.awaitingPong = false));
    ws.on('message', (data: RawData, isBinary: boolean) => {
      s.awaitingPong = false;
      if (isBinary) return;
      onFrame(s, data.toString());
    });
    ws.on('error', (err) => log.debug({ err: err.message }, 'socket error'));
    ws.on('close', () => {
      if (s.state !== 'closed') {
        s.state = 'closed';
        forget(s);
      }
    });
    const format = params.get('format');
    if (format !== null && format !== 'json') return fail(s, { type: 'MalformedData', msg: 'only format=json is supported' });
    const token = params.get('token');
    if (token) void authenticate(s, token, s.fields);
    else {
      setTimeout(() => {
        if (s.state === 'unauthenticated') fail(s, { type: 'InvalidSession' });
      }, o.authTimeoutMs).unref();
    }
  };

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== GATEWAY_PATH && path !== `${GATEWAY_PATH}/`) {
      socket.end('HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{"type":"NotFound"}');
      return;
    }
    if (closing) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{"type":"InternalError"}');
      return;
    }
    const address = requestAddress(req, o.trustProxy ?? []);
    const open = perAddress.get(address) ?? 0;
    if (open >= maxPerAddress) {
      socket.end('HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n{"retry_after":10000}');
      return;
    }
    perAddress.set(address, open + 1);
    wss.handleUpgrade(req, socket, head, (ws) => onConnection(ws, req));
  };
  o.server.on('upgrade', onUpgrade);

  const heartbeat = setInterval(() => {
    for (const s of hub.sockets) {
      if (s.state === 'closed') continue;
      if (s.awaitingPong) {
        s.drop('dead');
        continue;
      }
      s.awaitingPong = true;
      try {
        s.ws.ping();
      } catch {
        s.drop('dead');
      }
    }
  }, o.heartbeatMs);
  heartbeat.unref();

  return {
    get stats(): GatewayStats {
      return { connections: hub.sockets.size, dropped: { ...dropped }, factLoads: hub.facts.stats.loads, cachedServers: hub.facts.size };
    },
    async close() {
      if (closing) return;
      closing = true;
      o.server.off('upgrade', onUpgrade);
      clearInterval(heartbeat);
      const open = [...wss.clients];
      for (const s of [...hub.sockets]) s.drop('shutdown', 1001, 'going away');
      // Wait (briefly) for the closing handshakes; the sockets' own timers cut whoever does not answer.
      await Promise.race([
        Promise.all(open.map((ws) => (ws.readyState === ws.CLOSED ? undefined : new Promise((r) => ws.once('close', r))))),
        new Promise((r) => setTimeout(r, 2500).unref()),
      ]);
      await presence.stop();
      await reader.stop();
      typingSub.disconnect();
      await new Promise<void>((r) => wss.close(() => r()));
    },
  };
}
