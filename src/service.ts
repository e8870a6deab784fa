/**
 * The composition root's work: builds the event store, Redis connections, read models and each role the
 * configuration asks for, and stops them in order. `src/main.ts` calls it for the real process; tests call
 * it with ephemeral ports, a temporary data directory and their own Redis prefix.
 */
import type { Server, ServerResponse } from 'node:http';
import type https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { createRedis, isCluster, type RedisClient } from './redis.ts';
import type Koa from 'koa';
import { CommandExecutor } from './commands.ts';
import type { Config } from './config.ts';
import type { EventStore } from './eventstore/port.ts';
import { SqliteEventStore } from './eventstore/sqlite.ts';
import { SharedLogReader } from './eventstore/sharedReader.ts';
import { openEventStore } from './eventstore/open.ts';
import { openMailQueue } from './mail/queue.ts';
import { resolveVapid } from './push/vapid.ts';
import { keyStoreTarget, openConfiguredKeyStore } from './personal/keyStore.ts';
import { holdDataDir } from './backup/holders.ts';
import { PersonalDataStore } from './personal/store.ts';
import { openReadableEventStore, serviceSecrets } from './personal/open.ts';
import { createApiApp } from './http/app.ts';
import type { AppDeps } from './http/deps.ts';
import { API_ROUTES } from './http/routes/index.ts';
import { IdempotencyStore } from './idempotency/store.ts';
import { createLogger, type Logger } from './log.ts';
import { startGateway, type Gateway } from './gateway/gateway.ts';
import type { PreviewWorker } from '../workers/previews/worker.ts';
import { BlobStore } from './media/blobs.ts';
import type { UploadQueues } from './media/uploads.ts';
import { RateLimiter } from './ratelimit/limiter.ts';
import { clientEventGroups, controlKeys, liveShardCount } from './readmodel/keys.ts';
import { ReadModels } from './readmodel/reader.ts';
import { SearchIndexer } from './search/indexer.ts';
import { SearchIndexerThread } from './search/indexerThread.ts';
import { SearchReader } from './search/reader.ts';
import { Projector } from '../projections/projector.ts';
import { PROJECTIONS } from '../projections/index.ts';
import type { Projection } from '../projections/types.ts';
import type { MediaWorkers } from '../workers/media/worker.ts';
import type { PushWorker } from '../workers/push/worker.ts';
import { instrumentStore, trackFactCache, trackProjector, trackQueue } from './metrics/registry.ts';
import { startMetricsServer } from './metrics/server.ts';

/** Extra wiring for tests and tools. */
export interface ServiceOptions {
  log?: Logger;
  /** Clock for rate limits and event times (ms). */
  now?: () => number;
  /** Use this store instead of opening one from the configuration. */
  store?: EventStore;
  /** Projections of the projector role (default `PROJECTIONS`; tests inject faulty ones). */
  projections?: readonly Projection[];
  /** TEST HOOK (an injected fault): the fact cache applies its invalidations this much later (ms). */
  factCacheApplyDelayMs?: number;
  /** TEST HOOK: options of the push worker's outbound agents (e.g. a test CA for an HTTPS push endpoint). */
  pushAgentOptions?: https.AgentOptions;
}

/** A running service (some or all roles). */
export interface Service {
  config: Config;
  log: Logger;
  store: EventStore;
  redis: RedisClient;
  readModels: ReadModels;
  deps: AppDeps;
  projector: Projector | undefined;
  /**
   * The search indexer (role `projector`; it writes only while it holds the index file's lease): on a thread
   * of its own, or on the main thread when the service was given its event store (`opts.store`).
   */
  searchIndexer: SearchIndexer | SearchIndexerThread | undefined;
  /** The media workers (role `worker`). */
  mediaWorkers: MediaWorkers | undefined;
  /** The Web Push worker (role `worker`). */
  pushWorker: PushWorker | undefined;
  /** The link-preview worker and its producer (role `worker`). */
  previewWorker: PreviewWorker | undefined;
  /** The one reader of the log the worker role's followers share (push, previews, the voice enforcer). */
  logReader: SharedLogReader | undefined;
  /** The upload queues of the media server (role `media`). */
  uploads: UploadQueues | undefined;
  /** Blobs under `DATA_DIR/files`. */
  blobs: BlobStore;
  apiServer: Server | undefined;
  /** The events gateway on the API server (role `api`). */
  gateway: Gateway | undefined;
  mediaServer: Server | undefined;
  /** The `GET /metrics` listener (only with METRICS_PORT). */
  metricsServer: Server | undefined;
  /** Base URL of the metrics listener (actual port), when it runs. */
  metricsUrl: string | undefined;
  /** Base URL of the API (actual port). */
  apiUrl: string;
  /** Base URL of the media server (actual port). */
  mediaUrl: string;
  /** Hooks roles register to run at shutdown (after the servers stop accepting). */
  onStop: Array<() => Promise<void>>;
  /** Stops accepting, drains in-flight requests, stops the roles, closes Redis and the store (once). */
  stop(): Promise<void>;
}

// The operator tools' entry points, kept in src/personal/open.ts (light to load) and exported here too.
export { openEventStore, openReadableEventStore, serviceSecrets };

/** The idle time of a keep-alive connection that responses announce (`Keep-Alive: timeout=65`). */
export const KEEP_ALIVE_ANNOUNCED_MS = 65_000;
/**
 * How long the API and media servers keep an idle keep-alive connection: half a minute past what they
 * announce, so that a client reusing a connection just before the announced end never meets the close.
 */
export const KEEP_ALIVE_IDLE_MS = 95_000;

function listen(app: Koa, port: number, host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = app.listen(port, host);
    // An idle keep-alive connection stays open a minute, not Node's 5 s: a client that reuses a connection
    // at the moment the server closes it gets ECONNRESET on a request it cannot tell was never read (seen
    // with fetch on a loaded machine, where a pause of a few seconds straddles the 5 s; issue 40).
    // Announcing what is enforced still left a race: fetch (undici) drops an idle connection 2 s before the
    // announced end, Node closes it 1 s after, and a loaded machine that stalls the server's event loop for
    // longer than those 3 s runs the close before reading a request already sent (races.test, load
    // average 35-55). So responses announce 65 s (Node writes `res._keepAliveTimeout`, copied from
    // keepAliveTimeout before the 'request' event, into the header) and the server keeps the connection 95 s.
    server.keepAliveTimeout = KEEP_ALIVE_IDLE_MS;
    server.prependListener('request', (_req, res: ServerResponse) => {
      (res as ServerResponse & { _keepAliveTimeout?: number })._keepAliveTimeout = KEEP_ALIVE_ANNOUNCED_MS;
    });
    server.once('listening', () => resolve(server));
    server.once('error', reject);
  });
}

function closeServer(server: Server | undefined, drainMs: number): Promise<void> {
  if (!server) return Promise.resolve();
  return new Promise((resolve) => {
    // Stop accepting without http.Server#close's immediate sweep of idle connections: a connection
    // accepted a moment ago looks idle until its request is read, and must not be reset.
    net.Server.prototype.close.call(server, () => {
      // The grace timer too: fired after the close, its sweep would run forever and keep the process alive.
      clearTimeout(grace);
      clearInterval(sweep);
      clearTimeout(cut);
      resolve();
    });
    // After a grace period, keep-alive connections with nothing in flight are closed as they turn idle.
    let sweep: NodeJS.Timeout | undefined;
    const grace = setTimeout(() => {
      server.closeIdleConnections();
      sweep = setInterval(() => server.closeIdleConnections(), 250);
      sweep.unref();
    }, 2000);
    grace.unref();
    // In-flight requests get `drainMs` (SHUTDOWN_DRAIN_MS, ten seconds by default), then whatever is left is cut.
    const cut = setTimeout(() => {
      clearTimeout(grace);
      server.closeAllConnections();
    }, drainMs);
    cut.unref();
  });
}

/** Starts the roles of the configuration. */
/** Longest time one part of the service may take to close during `stop()` before it is left behind (ms). */
const STOP_PART_MS = 5000;

export async function startService(config: Config, opts: ServiceOptions = {}): Promise<Service> {
  // Refuses a key store only one machine reaches (KurrentDB without KEYSTORE_URL) before anything is opened.
  keyStoreTarget(config);
  const log = opts.log ?? createLogger(config.logLevel, { roles: config.roles.join(',') });
  const ctl = controlKeys(config.redisPrefix);
  // `npm run restore` refuses while a service process holds the data directory.
  const release = holdDataDir(config.dataDir);
  const redisOpts = { maxRetriesPerRequest: 3, enableOfflineQueue: true, connectTimeout: 5000 };
  // Requests issue many small reads at once: the commands of one event-loop turn go out in one write.
  const redis = createRedis(config.redisUrl, { ...redisOpts, autoPipelining: true });
  const subscriber = createRedis(config.redisUrl, { ...redisOpts, maxRetriesPerRequest: null });
  redis.on('error', (err) => log.debug({ err: err.message }, 'redis error'));
  subscriber.on('error', (err) => log.debug({ err: err.message }, 'redis subscriber error'));

  // Other processes announce SQLite commits so idle subscriptions here wake at once.
  // The search indexer's thread (set below) is woken the same way, by commits here and elsewhere.
  let indexerThread: SearchIndexerThread | undefined;
  const rawStore =
    opts.store ??
    (await openEventStore(config, (p) => {
      indexerThread?.wake();
      void redis.publish(ctl.controlChannel, `commit:${p}`).catch(() => {});
    }));
  subscriber.on('message', (channel: string, message: string) => {
    if (channel === ctl.controlChannel && message.startsWith('commit:') && rawStore instanceof SqliteEventStore) {
      rawStore.wake();
      indexerThread?.wake();
    }
  });
  // Personal fields are sealed on append and opened on read (src/personal/); keys live outside the log.
  // Appends are timed and counted (eventstore_* metrics) under the sealing; everything else is the store itself.
  const keys = await openConfiguredKeyStore(config);
  const sealedStore = instrumentStore(rawStore);
  const store = new PersonalDataStore(sealedStore, keys, { contentBucketMs: config.retentionBucketMs });
  const secrets = await serviceSecrets(config, keys);
  const vapid = await resolveVapid(config, keys);
  const mail = config.email && config.roles.includes('api') ? openMailQueue(config.redisUrl, config.redisPrefix, config.mailRetry, log) : undefined;

  const readModels = new ReadModels({
    redis,
    subscriber,
    prefix: config.redisPrefix,
    partitions: config.projectorPartitions,
    log,
    waitMs: config.projectionWaitMs,
  });
  await readModels.start();
  // The fact cache serves the API's reads of sessions, servers, channels and members (one Redis only: on a
  // cluster the invalidation streams are not written in the checkpoint's MULTI).
  let factCacheConn: RedisClient | undefined;
  if (config.roles.includes('api') && config.factCache.maxEntries > 0 && !isCluster(redis)) {
    factCacheConn = createRedis(config.redisUrl, { ...redisOpts, maxRetriesPerRequest: null, connectionName: 'fact-cache' });
    factCacheConn.on('error', (err) => log.debug({ err: err.message }, 'redis fact cache error'));
    await readModels.enableFactCache(factCacheConn, {
      ...config.factCache,
      ...(opts.factCacheApplyDelayMs !== undefined ? { applyDelayMs: opts.factCacheApplyDelayMs } : {}),
    });
  }

  const now = opts.now ?? Date.now;
  const executor = new CommandExecutor({ store, readModels, now: () => new Date(now()) });
  const deps: AppDeps = {
    config,
    log,
    store,
    readModels,
    executor,
    limiter: new RateLimiter({ now, enabled: config.rateLimits }),
    idempotency: new IdempotencyStore(),
    now,
    keys,
    secrets,
    mail,
    vapid,
  };

  let projector: Projector | undefined;
  if (config.roles.includes('projector')) {
    projector = new Projector({
      store,
      redisUrl: config.redisUrl,
      prefix: config.redisPrefix,
      partitions: config.projectorPartitions,
      ...(config.projectorPartition ? { preferred: config.projectorPartition } : {}),
      leaseMs: config.projectorLeaseMs,
      projections: opts.projections ?? PROJECTIONS,
      log,
    });
    await projector.start();
  }
  const untrack: Array<() => void> = [];
  if (readModels.factCache) untrack.push(trackFactCache(readModels.factCache));
  if (projector) {
    const p = projector;
    untrack.push(trackProjector({ store, partitions: () => p.runnerStates() }));
  }

  // The search index is a local SQLite file: written by the projector role's indexer, read by the API role.
  const searchFile = path.join(config.dataDir, 'search.sqlite');
  let searchIndexer: SearchIndexer | SearchIndexerThread | undefined;
  if (config.roles.includes('projector') && opts.store) {
    // A store handed in (tests, tools) cannot be opened again from another thread: index on this one.
    searchIndexer = new SearchIndexer({ store, file: searchFile, log, leaseMs: config.projectorLeaseMs });
    searchIndexer.start();
  } else if (config.roles.includes('projector')) {
    const keysAt = { dataDir: config.dataDir, eventStoreUrl: config.eventStoreUrl, keyStoreUrl: config.keyStoreUrl, erasureLog: config.erasureLog };
    indexerThread = new SearchIndexerThread({ store: { eventStoreUrl: config.eventStoreUrl, dataDir: config.dataDir, pgTimeouts: config.pgTimeouts }, keys: keysAt, file: searchFile, leaseMs: config.projectorLeaseMs, logLevel: config.logLevel }, log);
    indexerThread.start();
    searchIndexer = indexerThread;
  }
  if (config.roles.includes('api')) deps.search = new SearchReader({ store, file: searchFile, waitMs: config.projectionWaitMs });

  const blobs = new BlobStore(path.join(config.dataDir, 'files'));

  let mediaWorkers: MediaWorkers | undefined;
  if (config.roles.includes('worker')) {
    // Loaded only by the roles that use them: sharp, BullMQ and multer are heavy to import.
    const { startMediaWorkers } = await import('../workers/media/worker.ts');
    mediaWorkers = startMediaWorkers({ config, log, store, blobs });
    log.info({ concurrency: config.mediaConcurrency, default: config.mediaConcurrencyDefault }, 'media workers started');
  }
  let fileSweeper: { close(): Promise<void> } | undefined;
  if (config.roles.includes('worker')) {
    const { startFileSweeper } = await import('./media/sweep.ts');
    fileSweeper = startFileSweeper({ store, readModels, blobs, log, now }, config.fileSweepIntervalMs, config.unattachedFileMaxAgeMs, config.detachedFileRetentionMs);
  }
  let retentionSweeper: { close(): Promise<void> } | undefined;
  if (config.roles.includes('worker')) {
    const [{ startRetentionSweeper }, { uploadJobs }] = await Promise.all([import('./compliance/retention.ts'), import('./compliance/uploadJobs.ts')]);
    const n = config.projectorPartitions;
    const liveEvents = { redis, keys: clientEventGroups(config.redisPrefix, n, liveShardCount(isCluster(redis))).flat() };
    retentionSweeper = startRetentionSweeper({ store, readModels, blobs, log, now, previews: { redis, prefix: config.redisPrefix }, liveEvents, uploadJobs: uploadJobs(config.redisUrl, config.redisPrefix) }, config.retentionSweepIntervalMs);
  }
  let mailWorker: { close(): Promise<void> } | undefined;
  if (config.roles.includes('worker') && config.email) {
    const { startMailWorker } = await import('../workers/mail/worker.ts');
    mailWorker = startMailWorker({ redisUrl: config.redisUrl, redisPrefix: config.redisPrefix, smtpUrl: config.email.smtpUrl, from: config.email.from, log });
  }
  // The worker role's log followers (previews, the voice enforcer, push) read the log through one subscription,
  // each keeping its own checkpoint. It reads the sealed log and opens only the events a follower acts on: a
  // plain message in a server channel (no push, no preview) is never decrypted here. The destruction of an erased
  // subject's key is repeated by the projector's subscription (PersonalDataStore's), no longer by every follower's.
  const logReader = config.roles.includes('worker') ? new SharedLogReader(sealedStore, { open: (events) => store.openEvents(events) }) : undefined;
  let previewWorker: PreviewWorker | undefined;
  if (logReader) {
    const { startPreviewWorker } = await import('../workers/previews/worker.ts');
    previewWorker = await startPreviewWorker({ config, redis, store, log, reader: logReader });
  }
  let voiceEnforcer: { close(): Promise<void> } | undefined;
  if (config.roles.includes('worker') && config.voice.enabled) {
    const { startVoiceEnforcer } = await import('../workers/voice/enforcer.ts');
    voiceEnforcer = await startVoiceEnforcer({ config, log, store, readModels, now, ...(logReader ? { reader: logReader } : {}) });
  }

  let pushWorker: PushWorker | undefined;
  if (config.roles.includes('worker')) {
    const { startPushWorker } = await import('../workers/push/worker.ts');
    pushWorker = await startPushWorker({ config, log, store, readModels, executor, vapid, ...(logReader ? { reader: logReader } : {}), ...(opts.pushAgentOptions ? { agentOptions: opts.pushAgentOptions } : {}) });
  }

  let mediaServer: Server | undefined;
  let uploads: UploadQueues | undefined;
  let mediaUrl = config.mediaPublicUrl;
  if (config.roles.includes('media')) {
    const [{ UploadQueues }, { createMediaApp }] = await Promise.all([import('./media/uploads.ts'), import('./media/app.ts')]);
    uploads = new UploadQueues({ config, log, store, readModels, blobs });
    await uploads.start();
    for (const [tag, queue] of uploads.queuesByTag()) untrack.push(trackQueue(`media-${tag}`, queue));
    mediaServer = await listen(createMediaApp({ ...deps, blobs, uploads }), config.mediaPort, config.host);
    // Node's own limit (300 s, answered in plain text) must not cut an upload before UPLOAD_BODY_TIMEOUT_MS
    // does (answered in JSON); its check runs every 30 s.
    mediaServer.requestTimeout = config.uploadBodyTimeoutMs + 30_000;
    const port = (mediaServer.address() as { port: number }).port;
    if (config.mediaPort === 0) {
      mediaUrl = `http://127.0.0.1:${port}`;
      if (!process.env.MEDIA_PUBLIC_URL) config.mediaPublicUrl = mediaUrl;
    }
    log.info({ url: mediaUrl }, 'media listening');
  }

  // The API starts last: once it listens, every role of the process is up (and the media URL is known).
  let apiServer: Server | undefined;
  let apiUrl = config.publicUrl;
  if (config.roles.includes('api')) {
    apiServer = await listen(createApiApp(deps, API_ROUTES), config.apiPort, config.host);
    const port = (apiServer.address() as { port: number }).port;
    if (config.apiPort === 0) {
      // APP_URL given in the configuration (not only in process.env) is kept.
      const appDefault = config.appUrl === config.publicUrl;
      apiUrl = `http://127.0.0.1:${port}`;
      if (!process.env.PUBLIC_URL) config.publicUrl = apiUrl;
      if (!process.env.WS_PUBLIC_URL) config.wsPublicUrl = apiUrl.replace(/^http/, 'ws') + '/ws';
      if (!process.env.APP_URL && appDefault) config.appUrl = apiUrl;
    }
  }

  let gateway: Gateway | undefined;
  if (apiServer) {
    gateway = await startGateway({
      server: apiServer,
      readModels,
      redisUrl: config.redisUrl,
      prefix: config.redisPrefix,
      partitions: config.projectorPartitions,
      log,
      now,
      policyChangesFile: config.policyChangesFile,
      ...config.gateway,
      trustProxy: config.trustProxy,
    });
    log.info({ url: apiUrl }, 'api listening');
  }

  let metricsServer: Server | undefined;
  let metricsUrl: string | undefined;
  if (config.metrics.port !== undefined) {
    metricsServer = await startMetricsServer(config.metrics.port, config.metrics.host, log);
    const port = (metricsServer.address() as { port: number }).port;
    metricsUrl = `http://${config.metrics.host.includes(':') ? `[${config.metrics.host}]` : config.metrics.host}:${port}`;
    log.info({ url: metricsUrl }, 'metrics listening');
  }

  let stopping: Promise<void> | undefined;
  const service: Service = {
    config,
    log,
    store,
    redis,
    readModels,
    deps,
    projector,
    searchIndexer,
    mediaWorkers,
    pushWorker,
    previewWorker,
    logReader,
    uploads,
    blobs,
    apiServer,
    gateway,
    mediaServer,
    metricsServer,
    metricsUrl,
    apiUrl,
    mediaUrl,
    onStop: [],
    stop() {
      // Once: a second call (a signal during the stop, a test's teardown) waits for the first.
      return (stopping ??= (async () => {
        // The gateway closes its sockets (1001) while the servers stop accepting and drain: an open
        // WebSocket would otherwise keep the API server from closing.
        await Promise.all([service.gateway?.close(), closeServer(service.apiServer, config.shutdownDrainMs), closeServer(service.mediaServer, config.shutdownDrainMs)]);
        for (const u of untrack) u();
        for (const hook of service.onStop) await hook().catch((err: unknown) => log.warn({ err }, 'stop hook failed'));
        // Each part gets a bounded time: a queue or worker whose Redis node went away (a cluster master lost)
        // would otherwise hold the stop forever. What did not close in time is named in the log.
        const bounded = async (name: string, p: Promise<unknown> | undefined) => {
          if (!p) return;
          let timer: NodeJS.Timeout | undefined;
          const late = await Promise.race([
            p.then(() => false, (err: unknown) => (log.warn({ err, part: name }, 'stop: close failed'), false)),
            new Promise<boolean>((r) => (timer = setTimeout(() => r(true), STOP_PART_MS))),
          ]);
          clearTimeout(timer);
          if (late) log.warn({ part: name, ms: STOP_PART_MS }, 'stop: gave up waiting for a part to close');
        };
        await bounded('uploads', uploads?.close());
        await bounded('fileSweeper', fileSweeper?.close());
        await bounded('retentionSweeper', retentionSweeper?.close());
        await bounded('mediaWorkers', mediaWorkers?.close());
        await bounded('mailWorker', mailWorker?.close());
        await bounded('previewWorker', previewWorker?.close());
        await bounded('mail', mail?.close());
        await bounded('voiceEnforcer', voiceEnforcer?.close());
        await bounded('pushWorker', pushWorker?.close());
        await bounded('projector', projector?.stop());
        await bounded('searchIndexer', searchIndexer?.stop());
        deps.search?.close();
        readModels.close();
        await closeServer(service.metricsServer, config.shutdownDrainMs);
        subscriber.disconnect();
        // QUIT lets replies in flight arrive; bounded (a cluster node that went away never answers it).
        await Promise.race([redis.quit().catch(() => undefined), new Promise((r) => setTimeout(r, 2000).unref())]);
        redis.disconnect();
        if (!opts.store) await rawStore.close();
        await keys.close();
        release();
      })());
    },
  };
  return service;
}
