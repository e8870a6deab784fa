/**
 * Configuration from the environment, parsed once with zod (DESIGN §5). A bad value stops the start with
 * one line naming the variable (`ConfigError`).
 */
import { createECDH } from 'node:crypto';
import path from 'node:path';
import { z } from 'zod';
import { TAGS } from '../workers/media/policy.ts';
import { isValidAllowList, outboundPolicy, parseAllowList, type Cidr, type OutboundPolicy } from './outbound/policy.ts';
import { readPolicyFile } from './users/policy.ts';
import { parseApnsKey, parseServiceAccount, type ApnsKey, type ServiceAccount } from './push/credentials.ts';
import { clusterUrl } from './redis.ts';

/** The roles a process can run (DESIGN §2). */

/** The largest SERVER_CHANNEL_LIMIT accepted (also the absolute cap on a server's categories in a request body). */
export const MAX_SERVER_CHANNEL_LIMIT = 100_000;
export const ROLE_NAMES = ['api', 'media', 'projector', 'worker'] as const;
/** One role. */
export type RoleName = (typeof ROLE_NAMES)[number];

const port = z.coerce.number().int().min(0).max(65535);
const bool = z
  .enum(['1', '0', 'true', 'false', 'yes', 'no', 'on', 'off'])
  .transform((v) => v === '1' || v === 'true' || v === 'yes' || v === 'on');
const url = z.string().url();
/** A LiveKit server URL as clients connect to it (livekit-client takes ws(s) and, converting it, http(s)). */
const livekitUrl = url.refine((u) => /^(wss?|https?):\/\//.test(u), 'must be a ws://, wss://, http:// or https:// URL');
/** LiveKit refuses API secrets shorter than 32 characters, so a shorter one would only fail at the first call. */
const LIVEKIT_SECRET_MIN = 32;

const schema = z
  .object({
    API_PORT: port.default(14702),
    MEDIA_PORT: port.default(14704),
    HOST: z.string().min(1).default('0.0.0.0'),
    PUBLIC_URL: url.optional(),
    MEDIA_PUBLIC_URL: url.optional(),
    WS_PUBLIC_URL: url.optional(),
    APP_URL: url.optional(),
    DATA_DIR: z.string().min(1).default('./data'),
    /** The erasure record (accounts whose keys were destroyed; re-applied by a restore). Unset = DATA_DIR/erasures.jsonl. */
    ERASURE_LOG: z.string().min(1).optional(),
    REDIS_URL: url.default('redis://127.0.0.1:6379'),
    REDIS_CLUSTER_NODES: z
      .string()
      .refine((v) => {
        try {
          clusterUrl(v);
          return true;
        } catch {
          return false;
        }
      }, 'host:port,host:port,… (the seed nodes of a Redis Cluster; ports 1–65535)')
      .optional(),
    REDIS_PREFIX: z.string().regex(/^[A-Za-z0-9:_.-]*$/, 'letters, digits and :_.- only').default('stoat:'),
    EVENTSTORE_URL: z
      .string()
      .regex(/^((kurrentdb|kurrent|esdb|kdb)(\+discover)?|postgres|postgresql):\/\//, 'must be a kurrentdb://, kurrent://, esdb://, postgres:// or postgresql:// connection string')
      .optional(),
    /** Where the crypto-shredding key store lives: a postgres:// URL or a SQLite file path (default: beside the event store). */
    KEYSTORE_URL: z
      .string()
      .refine((v) => /^postgres(ql)?:\/\//.test(v) || !/^[a-z][a-z0-9+.-]*:\/\//i.test(v), 'must be a postgres:// or postgresql:// connection string or a SQLite file path')
      .optional(),
    /**
     * The embedded SQLite store's group commit: how long a queued group may wait for appends that commands still
     * deciding have announced (ms; 0 = commit every turn of the event loop). Never waits when nothing is announced.
     */
    SQLITE_COMMIT_DELAY_MS: z.coerce.number().min(0).max(100).default(1),
    /** PostgreSQL store: longest an append waits for the append lock before it fails (503, retryable) (ms). */
    PG_LOCK_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
    /** PostgreSQL store: longest one statement of the store may run, lock wait included (ms). */
    PG_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(15_000),
    /** PostgreSQL store: a session idle inside an open transaction this long is ended by the server, freeing its locks (ms). */
    PG_IDLE_TX_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
    ROLES: z
      .string()
      .default('api,media,projector,worker')
      .transform((s, ctx) => {
        const roles = s
          .split(',')
          .map((r) => r.trim())
          .filter(Boolean);
        for (const r of roles) {
          if (!(ROLE_NAMES as readonly string[]).includes(r)) {
            ctx.addIssue({ code: 'custom', message: `unknown role "${r}" (roles: ${ROLE_NAMES.join(', ')})` });
            return z.NEVER;
          }
        }
        if (roles.length === 0) {
          ctx.addIssue({ code: 'custom', message: 'at least one role' });
          return z.NEVER;
        }
        return [...new Set(roles)] as RoleName[];
      }),
    PROJECTOR_PARTITIONS: z.coerce.number().int().min(1).max(256).default(1),
    /** How long a projector's partition lease lives without renewal (ms); a dead projector's partitions move after it. */
    PROJECTOR_LEASE_MS: z.coerce.number().int().min(500).max(600_000).default(10_000),
    /** Comma-separated partitions this projector claims; unset = claim any free partition by lease. */
    PROJECTOR_PARTITION: z
      .string()
      .regex(/^\d+(,\d+)*$/, 'comma-separated partition numbers')
      .optional()
      .transform((s) => (s === undefined ? undefined : s.split(',').map(Number))),
    SERVER_CHANNEL_LIMIT: z.coerce.number().int().min(1).max(MAX_SERVER_CHANNEL_LIMIT).default(200),
    /** Most members of a group (Stoat's `group_size`, 100). */
    GROUP_SIZE_LIMIT: z.coerce.number().int().min(2).max(10_000).default(100),
    /** Most pending outgoing friend requests per user (Stoat's `outgoing_friend_requests`, 10). */
    FRIEND_REQUEST_LIMIT: z.coerce.number().int().min(1).max(10_000).default(10),
    /** Most bots one user may own (Stoat's default `bots` limit, 5). */
    BOT_LIMIT: z.coerce.number().int().min(0).max(1_000).default(5),
    RATE_LIMITS: z.enum(['on', 'off']).default('on'),
    VOICE_ENABLED: bool.default(false),
    LIVEKIT_URL: livekitUrl.optional(),
    LIVEKIT_API_KEY: z.string().min(1).optional(),
    LIVEKIT_API_SECRET: z.string().min(LIVEKIT_SECRET_MIN, `at least ${LIVEKIT_SECRET_MIN} characters (LiveKit refuses shorter secrets)`).optional(),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /**
     * The API process's fact cache (sessions, users, servers, channels, members; src/readmodel/factCache.ts):
     * at most this many entries; 0 turns it off. Always off on a Redis Cluster.
     */
    FACT_CACHE_ENTRIES: z.coerce.number().int().min(0).max(10_000_000).default(100_000),
    /** The fact cache's bound in memory (MB of keys and JSON text); the oldest entries go past it. */
    FACT_CACHE_MB: z.coerce.number().min(1).max(65_536).default(32),
    /** How long a request waits for the fact cache's invalidation stream before emptying the cache instead (ms). */
    FACT_CACHE_STALE_MS: z.coerce.number().int().min(1).max(60_000).default(100),
    /** Milliseconds a write waits for its projection before answering 503 (read-your-writes). */
    PROJECTION_WAIT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
    /** Milliseconds an upload waits for its processing job before answering 503. */
    UPLOAD_DEADLINE_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
    UNATTACHED_FILE_MAX_AGE_MS: z.coerce.number().int().min(1_000).max(365 * 86_400_000).default(86_400_000),
    FILE_SWEEP_INTERVAL_MS: z.coerce.number().int().min(0).max(86_400_000).default(600_000),
    DETACHED_FILE_RETENTION_MS: z.coerce.number().int().min(0).max(3650 * 86_400_000).default(7 * 86_400_000),
    /** Milliseconds between two retention sweeps of a worker (0 = never). */
    RETENTION_SWEEP_INTERVAL_MS: z.coerce.number().int().min(0).max(86_400_000).default(300_000),
    /** Width of the time buckets message content is sealed in (seconds); new messages only. */
    RETENTION_BUCKET_SECONDS: z.coerce.number().int().min(1).max(366 * 86_400).default(86_400),
    /** Milliseconds an upload's body may go without a byte before it is answered 408 and dropped. */
    UPLOAD_IDLE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
    /** Milliseconds an upload's whole body may take to arrive before it is answered 408 and dropped. */
    UPLOAD_BODY_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(600_000),
    /** Milliseconds in-flight HTTP requests get to complete after a stop (SIGTERM) before the rest are cut. */
    SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
    /** Worker concurrency per upload tag, e.g. `attachments=4,avatars=2`; other tags use the default. */
    MEDIA_CONCURRENCY: z
      .string()
      .regex(/^([a-z]+=\d+)(,[a-z]+=\d+)*$/, 'tag=n pairs separated by commas')
      .optional()
      .transform((s) =>
        Object.fromEntries((s ?? '').split(',').filter(Boolean).map((p) => {
          const [k, v] = p.split('=');
          return [k!, Number(v)];
        })) as Record<string, number>,
      ),
    MEDIA_CONCURRENCY_DEFAULT: z.coerce.number().int().min(1).max(64).default(2),
    /** Lock of a media job (ms): a worker that dies holding a job loses it after this long, and it is retried. */
    MEDIA_JOB_LOCK_MS: z.coerce.number().int().min(500).max(600_000).default(30_000),
    /** TEST HOOK: every media job sleeps this long before processing (tests of crashes and deadlines only). */
    MEDIA_TEST_DELAY_MS: z.coerce.number().int().min(0).max(600_000).default(0),
    INVITE_ONLY: bool.default(false),
    /** Milliseconds between the events gateway's pings; a socket that missed the previous ping is cut. */
    GATEWAY_HEARTBEAT_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
    /** Unsent bytes a gateway socket may have before it is cut as too slow. */
    GATEWAY_MAX_BUFFERED_BYTES: z.coerce.number().int().min(1024).max(1_073_741_824).default(8_388_608),
    /** Milliseconds a socket opened without `?token=` has to send `Authenticate`. */
    GATEWAY_AUTH_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
    /** Milliseconds an API process's presence registration lives without renewal (renewed every third of it). */
    GATEWAY_PRESENCE_TTL_MS: z.coerce.number().int().min(300).max(600_000).default(30_000),
    /** Outgoing mail: `smtp://user:pass@host:port` or `smtps://…`; unset = no mail, no verification (as before). */
    SMTP_URL: z.string().regex(/^smtps?:\/\/[^\s]+$/, 'must be an smtp:// or smtps:// URL').optional(),
    /** Sender of every mail (`Name <addr>` or `addr`). */
    EMAIL_FROM: z.string().min(3).max(320).default('Stoatish <noreply@localhost>'),
    /** First retry delay of an unsent mail (ms); it doubles with every attempt. */
    MAIL_RETRY_DELAY_MS: z.coerce.number().int().min(10).max(3_600_000).default(5000),
    /** Attempts to send a mail before it is given up. */
    MAIL_ATTEMPTS: z.coerce.number().int().min(1).max(50).default(12),
    /** Lifetime of a verification, reset or deletion link (seconds). */
    EMAIL_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(30 * 86_400).default(86_400),
    /** Mails one address may be sent per hour (verification, reset, email change, deletion together); more are not sent. */
    MAIL_PER_ADDRESS_PER_HOUR: z.coerce.number().int().min(1).max(10_000).default(5),
    /** Exports of their own data (GET /auth/account/export, a read of the whole log each) one account may take per day. */
    ACCOUNT_EXPORTS_PER_DAY: z.coerce.number().int().min(1).max(1000).default(3),
    /** Master secret (≥ 32 bytes as 64+ hex characters or base64): TOTP secrets at rest, keyed email lookups. Unset = generated once and kept in the key store (KEYSTORE_URL). */
    SECRETS_KEY: z
      .string()
      .refine((v) => secretBytes(v) !== null, 'must be at least 32 bytes, as hex (64+ characters) or base64')
      .optional(),
    /** Fixed account invite codes (comma-separated), each valid from the start (with INVITE_ONLY). */
    ACCOUNT_INVITES: z
      .string()
      .regex(/^[A-Za-z0-9_-]{4,128}(,[A-Za-z0-9_-]{4,128})*$/, 'comma-separated codes of 4–128 letters, digits, "_" or "-"')
      .optional()
      .transform((s) => (s === undefined ? [] : [...new Set(s.split(','))])),
    /** Servers a user may own or be a member of (Stoat's per-user server limit). */
    USER_SERVER_LIMIT: z.coerce.number().int().min(1).max(100_000).default(100),
    /** Bytes (keys and values, UTF-8) one `POST /sync/settings/set` may write; more → 400 FailedValidation. */
    SETTINGS_WRITE_MAX_BYTES: z.coerce.number().int().min(1000).max(1_000_000).default(128_000),
    /** Bytes of settings writes (each counted with a 256-byte event overhead) one account may add to the log per 24 hours; more → 429. */
    SETTINGS_LOG_BYTES_PER_DAY: z.coerce.number().int().min(10_000).max(1_000_000_000).default(2_000_000),
    /** Sockets one user may hold open on one API process; the next is refused. */
    GATEWAY_MAX_SOCKETS_PER_USER: z.coerce.number().int().min(1).max(100_000).default(16),
    /** Sockets one client address may hold open on one API process (authenticated or not); the next upgrade is refused with 429. */
    GATEWAY_MAX_SOCKETS_PER_ADDRESS: z.coerce.number().int().min(1).max(1_000_000).default(64),
    /** Port of `GET /metrics` (Prometheus); unset = no metrics listener at all. */
    METRICS_PORT: port.optional(),
    /** Address the metrics listener binds to (loopback unless the operator opens it on purpose). */
    METRICS_HOST: z.string().min(1).default('127.0.0.1'),
    /** Private ranges (comma-separated CIDRs) that outbound requests — previews, the image proxy, push — may reach; empty = none. */
    /** Proxies whose X-Forwarded-For is believed (CIDRs or addresses); empty = none: the socket's peer is the client. */
    TRUST_PROXY: z.string().refine(isValidAllowList, 'comma-separated CIDRs or addresses of the proxies in front, e.g. 127.0.0.1,10.0.0.0/8').optional(),
    OUTBOUND_ALLOW_PRIVATE: z.string().refine(isValidAllowList, 'comma-separated CIDRs or addresses, e.g. 127.0.0.0/8,10.0.0.0/8').optional(),
    /** VAPID public key (base64url of the 65-byte uncompressed P-256 point); with VAPID_PRIVATE_KEY, or neither (generated once, kept in the key store). */
    VAPID_PUBLIC_KEY: z.string().refine((v) => vapidPublicBytes(v) !== null, 'must be base64url of a 65-byte uncompressed P-256 public key').optional(),
    /** VAPID private key (base64url of the 32-byte P-256 scalar). */
    VAPID_PRIVATE_KEY: z.string().refine((v) => vapidPrivateBytes(v) !== null, 'must be base64url of a 32-byte P-256 private key').optional(),
    /** VAPID subject: a mailto: address or an https: URL push services may contact; default mailto: EMAIL_FROM's address. */
    VAPID_SUBJECT: z.string().max(512).refine((v) => /^(mailto:[^\s]+|https:\/\/[^\s]+)$/.test(v), 'must be a mailto: address or an https: URL').optional(),
    /** Attempts to deliver one push notification before it is given up (retried with exponential backoff). */
    PUSH_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(5),
    /** First retry delay of an undelivered push (ms); it doubles with every attempt. */
    PUSH_RETRY_DELAY_MS: z.coerce.number().int().min(10).max(3_600_000).default(2000),
    /** Milliseconds one request to a push service may take. */
    PUSH_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
    /** Push notifications one user may have queued or in delivery at once; more are dropped until some finish. */
    PUSH_USER_LIMIT: z.coerce.number().int().min(1).max(10_000).default(50),
    /** hCaptcha secret: with CAPTCHA_SITEKEY, account creation, password reset and resend need a solved `captcha`. */
    CAPTCHA_SECRET: z.string().max(512).optional(),
    /** hCaptcha site key advertised to clients as `features.captcha.key`. */
    CAPTCHA_SITEKEY: z.string().max(512).optional(),
    /** Where captcha answers are verified (hCaptcha's siteverify, or a compatible service). */
    CAPTCHA_VERIFY_URL: url.refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL').default('https://api.hcaptcha.com/siteverify'),
    /** Path of the JSON file of policy changes (Stoat's PolicyChange array) shown in Ready until acknowledged; unset = none. */
    POLICY_CHANGES: z.string().min(1).max(4096).optional(),
    /** FCM (Android push): the Firebase service-account JSON, or the path of a file holding it; unset = no FCM. */
    FCM_SERVICE_ACCOUNT: z.string().optional(),
    /** FCM: origin of the send URL (`<origin>/v1/projects/<id>/messages:send`); default Google's. */
    FCM_ENDPOINT: url.refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL').optional(),
    /** APNs (iOS push): the `.p8` provider key (PEM), or the path of a file holding it; with APNS_KEY_ID, APNS_TEAM_ID and APNS_TOPIC. */
    APNS_KEY: z.string().optional(),
    /** APNs: the provider key's id (the token's `kid`). */
    APNS_KEY_ID: z.string().regex(/^[A-Za-z0-9]{1,32}$/, 'letters and digits (Apple\'s 10-character key id)').optional(),
    /** APNs: the team id (the token's `iss`). */
    APNS_TEAM_ID: z.string().regex(/^[A-Za-z0-9]{1,32}$/, 'letters and digits (Apple\'s 10-character team id)').optional(),
    /** APNs: the app's bundle id (`apns-topic`). */
    APNS_TOPIC: z.string().regex(/^[A-Za-z0-9.-]{1,200}$/, 'a bundle id such as chat.revolt.app').optional(),
    /** APNs: use Apple's sandbox host (development builds of the app). */
    APNS_SANDBOX: bool.default(false),
    /** APNs: origin requests go to instead of Apple's host (an https: URL). */
    APNS_ENDPOINT: url.refine((u) => /^https:\/\//.test(u), 'must be an https: URL (APNs is HTTP/2 over TLS)').optional(),
    /** Deadline of one link-preview or image-proxy fetch (every redirect hop and the body together). */
    PREVIEW_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
    /** Bytes of a page read for its preview (the head is parsed from these; the rest is never read). */
    PREVIEW_MAX_BYTES: z.coerce.number().int().min(1024).max(50_000_000).default(1_000_000),
    /** Redirects one outbound fetch follows (each Location checked again). */
    PREVIEW_MAX_REDIRECTS: z.coerce.number().int().min(0).max(20).default(5),
    /** How long a URL's preview is kept in the Redis cache. */
    PREVIEW_CACHE_TTL_SECONDS: z.coerce.number().int().min(1).max(30 * 86_400).default(3600),
    /** Most URLs whose previews the cache keeps (the oldest go first). */
    PREVIEW_CACHE_MAX: z.coerce.number().int().min(1).max(10_000_000).default(10_000),
    /** Preview jobs one worker process runs at once. */
    PREVIEW_CONCURRENCY: z.coerce.number().int().min(1).max(256).default(4),
    /** Tries of one preview job (a worker that dies mid-job counts as one) before it is dropped. */
    PREVIEW_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(5),
    /** A preview worker that dies mid-job loses the job to another worker after this long (ms; its lock, renewed while it lives). */
    PREVIEW_JOB_LOCK_MS: z.coerce.number().int().min(1000).max(600_000).default(30_000),
    /** Largest remote image the proxy (`GET /proxy?url=`) fetches; more → 422 FileTooLarge. */
    PROXY_MAX_BYTES: z.coerce.number().int().min(1024).max(100_000_000).default(20_000_000),
    /** Bytes of re-encoded proxy images kept in memory per media process (least recently used go first). */
    PROXY_CACHE_BYTES: z.coerce.number().int().min(0).max(4_000_000_000).default(128_000_000),
    /** How long a proxied image is kept in that cache. */
    PROXY_CACHE_TTL_SECONDS: z.coerce.number().int().min(1).max(86_400).default(600),
    /** Proxy loads (fetch and decode) one media process runs at once; the next is refused at once with 429. */
    PROXY_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(4),
    /** Proxy loads one client (user, or address without a session) may have running at once; the next → 429. */
    PROXY_CLIENT_CONCURRENCY: z.coerce.number().int().min(1).max(1024).default(2),
    /** Pixels of one frame the proxy decodes (a still image) or passes on (an animation); more → 400 FileTypeNotAllowed. */
    PROXY_MAX_PIXELS: z.coerce.number().int().min(1024).max(40_000_000).default(16_000_000),
  })
  .superRefine((c, ctx) => {
    if ((c.VAPID_PUBLIC_KEY === undefined) !== (c.VAPID_PRIVATE_KEY === undefined)) {
      ctx.addIssue({ code: 'custom', path: [c.VAPID_PUBLIC_KEY === undefined ? 'VAPID_PUBLIC_KEY' : 'VAPID_PRIVATE_KEY'], message: 'VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY are set together (or neither: generated once)' });
    } else if (c.VAPID_PUBLIC_KEY !== undefined && c.VAPID_PRIVATE_KEY !== undefined && !vapidPairMatches(c.VAPID_PUBLIC_KEY, c.VAPID_PRIVATE_KEY)) {
      ctx.addIssue({ code: 'custom', path: ['VAPID_PUBLIC_KEY'], message: 'is not the public key of VAPID_PRIVATE_KEY' });
    }
    if (c.FCM_SERVICE_ACCOUNT !== undefined) {
      try {
        parseServiceAccount(c.FCM_SERVICE_ACCOUNT);
      } catch (err) {
        ctx.addIssue({ code: 'custom', path: ['FCM_SERVICE_ACCOUNT'], message: (err as Error).message });
      }
    }
    if ((c.CAPTCHA_SECRET === undefined) !== (c.CAPTCHA_SITEKEY === undefined)) {
      ctx.addIssue({ code: 'custom', path: [c.CAPTCHA_SECRET === undefined ? 'CAPTCHA_SECRET' : 'CAPTCHA_SITEKEY'], message: 'CAPTCHA_SECRET and CAPTCHA_SITEKEY are set together' });
    }
    if (c.POLICY_CHANGES !== undefined) {
      try {
        readPolicyFile(c.POLICY_CHANGES);
      } catch (err) {
        ctx.addIssue({ code: 'custom', path: ['POLICY_CHANGES'], message: (err as Error).message });
      }
    }
    const apns = [c.APNS_KEY, c.APNS_KEY_ID, c.APNS_TEAM_ID, c.APNS_TOPIC];
    if (apns.some((v) => v !== undefined) && apns.some((v) => v === undefined)) {
      const missing = (['APNS_KEY', 'APNS_KEY_ID', 'APNS_TEAM_ID', 'APNS_TOPIC'] as const).find((k) => c[k] === undefined)!;
      ctx.addIssue({ code: 'custom', path: [missing], message: 'APNS_KEY, APNS_KEY_ID, APNS_TEAM_ID and APNS_TOPIC are set together' });
    } else if (c.APNS_KEY !== undefined) {
      try {
        parseApnsKey(c.APNS_KEY);
      } catch (err) {
        ctx.addIssue({ code: 'custom', path: ['APNS_KEY'], message: (err as Error).message });
      }
    }
    if (c.VOICE_ENABLED) {
      for (const k of ['LIVEKIT_URL', 'LIVEKIT_API_KEY', 'LIVEKIT_API_SECRET'] as const) {
        if (!c[k]) ctx.addIssue({ code: 'custom', path: [k], message: 'required when VOICE_ENABLED is on' });
      }
    }
    for (const [tag, n] of Object.entries(c.MEDIA_CONCURRENCY)) {
      if (!(TAGS as readonly string[]).includes(tag) || !(n >= 1 && n <= 64)) {
        ctx.addIssue({ code: 'custom', path: ['MEDIA_CONCURRENCY'], message: `"${tag}=${n}": tags are ${TAGS.join(', ')}, n is 1–64` });
      }
    }
    if (c.PG_LOCK_TIMEOUT_MS > c.PG_STATEMENT_TIMEOUT_MS) {
      ctx.addIssue({ code: 'custom', path: ['PG_LOCK_TIMEOUT_MS'], message: `must not exceed PG_STATEMENT_TIMEOUT_MS=${c.PG_STATEMENT_TIMEOUT_MS}` });
    }
    if (c.UPLOAD_IDLE_TIMEOUT_MS > c.UPLOAD_BODY_TIMEOUT_MS) {
      ctx.addIssue({ code: 'custom', path: ['UPLOAD_IDLE_TIMEOUT_MS'], message: `must not exceed UPLOAD_BODY_TIMEOUT_MS=${c.UPLOAD_BODY_TIMEOUT_MS}` });
    }
    if (c.PROJECTOR_PARTITION) {
      for (const p of c.PROJECTOR_PARTITION) {
        if (p >= c.PROJECTOR_PARTITIONS) {
          ctx.addIssue({
            code: 'custom',
            path: ['PROJECTOR_PARTITION'],
            message: `partition ${p} is not below PROJECTOR_PARTITIONS=${c.PROJECTOR_PARTITIONS}`,
          });
        }
      }
    }
  });

/** Parsed configuration. */
export interface Config {
  apiPort: number;
  mediaPort: number;
  host: string;
  /** Public base URL of the API (no trailing slash). */
  publicUrl: string;
  /** Public base URL of the media server, advertised as `features.autumn.url`. */
  mediaPublicUrl: string;
  /** Public URL of the events WebSocket, advertised as `ws`. */
  wsPublicUrl: string;
  appUrl: string;
  dataDir: string;
  /** Path of the erasure record (src/backup/erasures.ts). */
  erasureLog: string;
  /** `redis://…` (one Redis) or `redis-cluster://host:port,…` (REDIS_CLUSTER_NODES; `src/redis.ts` opens either). */
  redisUrl: string;
  redisPrefix: string;
  /** KurrentDB connection string; undefined = the embedded SQLite store under dataDir. */
  eventStoreUrl: string | undefined;
  /** KEYSTORE_URL: a postgres:// URL or an absolute SQLite file path; undefined = beside the event store. */
  keyStoreUrl: string | undefined;
  /** The SQLite store's longest hold of a group for announced appends (ms). */
  sqliteCommitDelayMs: number;
  /** The PostgreSQL store's session time limits (ms): lock wait, statement, idle inside a transaction. */
  pgTimeouts: { lockMs: number; statementMs: number; idleInTransactionMs: number };
  roles: RoleName[];
  projectorPartitions: number;
  projectorPartition: number[] | undefined;
  projectorLeaseMs: number;
  serverChannelLimit: number;
  /** GROUP_SIZE_LIMIT: most members of a group. */
  groupSizeLimit: number;
  /** FRIEND_REQUEST_LIMIT: most pending outgoing friend requests. */
  friendRequestLimit: number;
  /** BOT_LIMIT: most bots one user may own. */
  botLimit: number;
  rateLimits: boolean;
  /** Voice through LiveKit (DESIGN §4 "voice"): the three LiveKit settings exist exactly when it is enabled. */
  voice: VoiceConfig;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  projectionWaitMs: number;
  /** The fact cache: most entries (0 = off) and how long a request waits for its stream (ms). */
  factCache: { maxEntries: number; maxBytes: number; staleMs: number };
  uploadDeadlineMs: number;
  /** UNATTACHED_FILE_MAX_AGE_MS: an upload nothing used within this long is swept (its id 404, its bytes removed). */
  unattachedFileMaxAgeMs: number;
  /** FILE_SWEEP_INTERVAL_MS: how often a worker sweeps unattached uploads and purges detached files; 0 = never. */
  fileSweepIntervalMs: number;
  /** DETACHED_FILE_RETENTION_MS: how long the bytes of a file nothing uses any more (not served) are kept. */
  detachedFileRetentionMs: number;
  /** RETENTION_SWEEP_INTERVAL_MS: how often a worker runs the retention sweep; 0 = never. */
  retentionSweepIntervalMs: number;
  /** RETENTION_BUCKET_SECONDS × 1000: the width of a message-content key's time bucket. */
  retentionBucketMs: number;
  /** An upload body with no byte for this long (ms) is cut off: 408 (slow-loris). */
  uploadIdleTimeoutMs: number;
  /** An upload body not received within this long (ms) is cut off: 408. */
  uploadBodyTimeoutMs: number;
  /** SHUTDOWN_DRAIN_MS: how long in-flight HTTP requests get after a stop before the rest are cut. */
  shutdownDrainMs: number;
  mediaConcurrency: Record<string, number>;
  mediaConcurrencyDefault: number;
  /** Lock duration and stalled-check interval of media jobs (ms). */
  mediaJobLockMs: number;
  /** Test hook: delay injected before each media job (ms); 0 outside tests. */
  mediaTestDelayMs: number;
  inviteOnly: boolean;
  /** Events gateway: ping interval (ms), unsent-bytes limit per socket, time to authenticate (ms), presence TTL (ms). */
  gateway: { heartbeatMs: number; maxBufferedBytes: number; authTimeoutMs: number; presenceTtlMs: number; maxSocketsPerUser: number; maxSocketsPerAddress: number };
  /** Outgoing mail (SMTP_URL, EMAIL_FROM): undefined = mail off, accounts need no verification. */
  email: { smtpUrl: string; from: string } | undefined;
  /** Mail retries: attempts, first delay (ms, doubling). */
  mailRetry: { attempts: number; delayMs: number };
  /** Lifetime of mailed tokens (ms). */
  emailTokenTtlMs: number;
  /** MAIL_PER_ADDRESS_PER_HOUR: mails one address may be sent per hour. */
  mailPerAddressPerHour: number;
  /** ACCOUNT_EXPORTS_PER_DAY: exports of their own data one account may take per day. */
  accountExportsPerDay: number;
  /** SECRETS_KEY decoded; undefined = generated and kept in the key store. */
  secretsKey: Buffer | undefined;
  /** ACCOUNT_INVITES: fixed invite codes valid from the start. */
  accountInvites: string[];
  /** USER_SERVER_LIMIT. */
  userServerLimit: number;
  /** Settings sync: bytes of one write, and bytes one account may add to the log per 24 hours. */
  settings: { writeMaxBytes: number; logBytesPerDay: number };
  /** `GET /metrics` listener: port (undefined = not served) and bind address. */
  metrics: { port: number | undefined; host: string };
  /** Where outbound requests may connect (OUTBOUND_ALLOW_PRIVATE parsed; global unicast is always allowed). */
  outbound: OutboundPolicy;
  /** TRUST_PROXY parsed: the proxies whose X-Forwarded-For names the client (empty: none). */
  trustProxy: readonly Cidr[];
  /** POLICY_CHANGES: the policy-change file (absolute), or undefined. */
  policyChangesFile: string | undefined;
  /** hCaptcha (CAPTCHA_*): undefined = off. */
  captcha: { secret: string; siteKey: string; verifyUrl: string } | undefined;
  /** Web Push: configured VAPID keys (undefined = generated and kept in the key store), subject, delivery bounds. */
  push: PushConfig;
  /** Link previews (Stoat's January): fetch limits, the per-URL cache and the job queue. */
  previews: PreviewConfig;
  /** The image proxy on the media server: size cap and its in-memory cache. */
  proxy: ProxyConfig;
}

/** Image-proxy settings (PROXY_*). */
export interface ProxyConfig {
  /** Largest remote image fetched, in bytes. */
  maxBytes: number;
  /** Bytes of proxied images kept in memory. */
  cacheBytes: number;
  /** How long a proxied image is cached (ms). */
  cacheTtlMs: number;
  /** Loads running at once in one media process. */
  concurrency: number;
  /** Loads running at once for one client. */
  clientConcurrency: number;
  /** Pixels of one frame decoded or passed on. */
  maxPixels: number;
}

/** Link-preview settings (PREVIEW_*). */
export interface PreviewConfig {
  timeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
  cacheTtlSeconds: number;
  cacheMax: number;
  concurrency: number;
  attempts: number;
  /** A dead worker's job moves to another worker after this long (ms). */
  jobLockMs: number;
}

/** Web Push settings (VAPID_*, PUSH_*). */
export interface PushConfig {
  /** VAPID_PUBLIC_KEY / VAPID_PRIVATE_KEY (base64url); undefined = the key store's generated pair. */
  vapid: { publicKey: string; privateKey: string } | undefined;
  /** VAPID_SUBJECT, or mailto: the address of EMAIL_FROM. */
  subject: string;
  attempts: number;
  retryDelayMs: number;
  timeoutMs: number;
  /** PUSH_USER_LIMIT: pushes one user may have queued or in delivery. */
  userLimit: number;
  /** FCM (FCM_SERVICE_ACCOUNT, FCM_ENDPOINT); undefined = subscriptions with endpoint "fcm" get nothing. */
  fcm: { account: ServiceAccount; origin: string } | undefined;
  /** APNs (APNS_*); undefined = subscriptions with endpoint "apn" get nothing. */
  apns: { key: ApnsKey; keyId: string; teamId: string; topic: string; origin: string } | undefined;
}

/** The 65-byte uncompressed point of a VAPID public key, or null. */
export function vapidPublicBytes(v: string): Buffer | null {
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(v)) return null;
  const b = Buffer.from(v.replace(/=+$/, ''), 'base64url');
  return b.length === 65 && b[0] === 4 ? b : null;
}

/** The 32-byte scalar of a VAPID private key, or null. */
export function vapidPrivateBytes(v: string): Buffer | null {
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(v)) return null;
  const b = Buffer.from(v.replace(/=+$/, ''), 'base64url');
  return b.length === 32 ? b : null;
}

/** The public key (base64url) of a P-256 private scalar; throws when the scalar is not a valid key. */
export function vapidPublicOf(privateKey: Buffer): string {
  const ecdh = createECDH('prime256v1');
  ecdh.setPrivateKey(privateKey);
  return ecdh.getPublicKey().toString('base64url');
}

function vapidPairMatches(publicKey: string, privateKey: string): boolean {
  try {
    return vapidPublicOf(vapidPrivateBytes(privateKey)!).replace(/=+$/, '') === publicKey.replace(/=+$/, '');
  } catch {
    return false;
  }
}

/** `mailto:` the address inside EMAIL_FROM (`Name <addr>` or `addr`). */
function subjectFromEmail(from: string): string {
  const m = /<([^>]+)>/.exec(from);
  return `mailto:${(m ? m[1]! : from).trim()}`;
}

/** Decodes SECRETS_KEY: 64+ hex characters, or base64 of at least 32 bytes; null otherwise. */
export function secretBytes(v: string): Buffer | null {
  if (/^[0-9a-fA-F]+$/.test(v) && v.length % 2 === 0) return v.length >= 64 ? Buffer.from(v, 'hex') : null;
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(v)) return null;
  const b = Buffer.from(v, 'base64');
  return b.length >= 32 ? b : null;
}

/** VOICE_ENABLED with its LiveKit server, or voice off. */
export type VoiceConfig =
  | {
      enabled: true;
      /** LIVEKIT_URL: where clients connect (`url` of join_call, `public_url` of the node in `GET /`). */
      url: string;
      /** LIVEKIT_API_KEY: the issuer of join tokens. */
      apiKey: string;
      /** LIVEKIT_API_SECRET: signs join tokens (HS256). */
      apiSecret: string;
    }
  | { enabled: false };

/** A configuration value is wrong; the message is one line naming the variable. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Variables whose value must not appear in an error line. */
const SECRET_VARIABLE = /SECRET|PASSWORD|TOKEN|_KEY$|^SMTP_URL$|^ACCOUNT_INVITES$|^FCM_SERVICE_ACCOUNT$/;

/** Parses the environment (process.env by default). Empty strings count as unset. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const name = String(issue.path[0] ?? 'environment');
    // The line goes to logs: a secret's value is never repeated in it.
    const value = SECRET_VARIABLE.test(name) ? undefined : cleaned[name];
    throw new ConfigError(
      `invalid configuration: ${name}${value === undefined ? '' : `=${JSON.stringify(value)}`}: ${issue.message}`,
    );
  }
  const c = parsed.data;
  const publicUrl = trimSlash(c.PUBLIC_URL ?? `http://127.0.0.1:${c.API_PORT}`);
  const wsDefault = publicUrl.replace(/^http/, 'ws') + '/ws';
  return {
    apiPort: c.API_PORT,
    mediaPort: c.MEDIA_PORT,
    host: c.HOST,
    publicUrl,
    mediaPublicUrl: trimSlash(c.MEDIA_PUBLIC_URL ?? `http://127.0.0.1:${c.MEDIA_PORT}`),
    wsPublicUrl: c.WS_PUBLIC_URL ?? wsDefault,
    appUrl: c.APP_URL ?? publicUrl,
    dataDir: path.resolve(c.DATA_DIR),
    erasureLog: path.resolve(c.ERASURE_LOG ?? path.join(c.DATA_DIR, 'erasures.jsonl')),
    redisUrl: c.REDIS_CLUSTER_NODES !== undefined ? clusterUrl(c.REDIS_CLUSTER_NODES) : c.REDIS_URL,
    redisPrefix: c.REDIS_PREFIX,
    eventStoreUrl: c.EVENTSTORE_URL,
    keyStoreUrl: c.KEYSTORE_URL === undefined || /^postgres(ql)?:\/\//.test(c.KEYSTORE_URL) ? c.KEYSTORE_URL : path.resolve(c.KEYSTORE_URL),
    sqliteCommitDelayMs: c.SQLITE_COMMIT_DELAY_MS,
    pgTimeouts: { lockMs: c.PG_LOCK_TIMEOUT_MS, statementMs: c.PG_STATEMENT_TIMEOUT_MS, idleInTransactionMs: c.PG_IDLE_TX_TIMEOUT_MS },
    roles: c.ROLES,
    projectorPartitions: c.PROJECTOR_PARTITIONS,
    projectorPartition: c.PROJECTOR_PARTITION,
    projectorLeaseMs: c.PROJECTOR_LEASE_MS,
    serverChannelLimit: c.SERVER_CHANNEL_LIMIT,
    groupSizeLimit: c.GROUP_SIZE_LIMIT,
    friendRequestLimit: c.FRIEND_REQUEST_LIMIT,
    botLimit: c.BOT_LIMIT,
    rateLimits: c.RATE_LIMITS === 'on',
    voice: voiceConfig(c),
    logLevel: c.LOG_LEVEL,
    projectionWaitMs: c.PROJECTION_WAIT_MS,
    factCache: { maxEntries: c.FACT_CACHE_ENTRIES, maxBytes: Math.round(c.FACT_CACHE_MB * 2 ** 20), staleMs: c.FACT_CACHE_STALE_MS },
    uploadDeadlineMs: c.UPLOAD_DEADLINE_MS,
    unattachedFileMaxAgeMs: c.UNATTACHED_FILE_MAX_AGE_MS,
    fileSweepIntervalMs: c.FILE_SWEEP_INTERVAL_MS,
    detachedFileRetentionMs: c.DETACHED_FILE_RETENTION_MS,
    retentionSweepIntervalMs: c.RETENTION_SWEEP_INTERVAL_MS,
    retentionBucketMs: c.RETENTION_BUCKET_SECONDS * 1000,
    uploadIdleTimeoutMs: c.UPLOAD_IDLE_TIMEOUT_MS,
    uploadBodyTimeoutMs: c.UPLOAD_BODY_TIMEOUT_MS,
    shutdownDrainMs: c.SHUTDOWN_DRAIN_MS,
    mediaConcurrency: c.MEDIA_CONCURRENCY,
    mediaConcurrencyDefault: c.MEDIA_CONCURRENCY_DEFAULT,
    mediaJobLockMs: c.MEDIA_JOB_LOCK_MS,
    mediaTestDelayMs: c.MEDIA_TEST_DELAY_MS,
    inviteOnly: c.INVITE_ONLY,
    gateway: {
      heartbeatMs: c.GATEWAY_HEARTBEAT_MS,
      maxBufferedBytes: c.GATEWAY_MAX_BUFFERED_BYTES,
      authTimeoutMs: c.GATEWAY_AUTH_TIMEOUT_MS,
      presenceTtlMs: c.GATEWAY_PRESENCE_TTL_MS,
      maxSocketsPerUser: c.GATEWAY_MAX_SOCKETS_PER_USER,
      maxSocketsPerAddress: c.GATEWAY_MAX_SOCKETS_PER_ADDRESS,
    },
    email: c.SMTP_URL ? { smtpUrl: c.SMTP_URL, from: c.EMAIL_FROM } : undefined,
    mailRetry: { attempts: c.MAIL_ATTEMPTS, delayMs: c.MAIL_RETRY_DELAY_MS },
    emailTokenTtlMs: c.EMAIL_TOKEN_TTL_SECONDS * 1000,
    mailPerAddressPerHour: c.MAIL_PER_ADDRESS_PER_HOUR,
    accountExportsPerDay: c.ACCOUNT_EXPORTS_PER_DAY,
    secretsKey: c.SECRETS_KEY ? secretBytes(c.SECRETS_KEY)! : undefined,
    accountInvites: c.ACCOUNT_INVITES,
    userServerLimit: c.USER_SERVER_LIMIT,
    settings: { writeMaxBytes: c.SETTINGS_WRITE_MAX_BYTES, logBytesPerDay: c.SETTINGS_LOG_BYTES_PER_DAY },
    metrics: { port: c.METRICS_PORT, host: c.METRICS_HOST },
    outbound: outboundPolicy(c.OUTBOUND_ALLOW_PRIVATE),
    trustProxy: parseAllowList(c.TRUST_PROXY),
    policyChangesFile: c.POLICY_CHANGES !== undefined ? path.resolve(c.POLICY_CHANGES) : undefined,
    captcha: c.CAPTCHA_SECRET !== undefined && c.CAPTCHA_SITEKEY !== undefined ? { secret: c.CAPTCHA_SECRET, siteKey: c.CAPTCHA_SITEKEY, verifyUrl: c.CAPTCHA_VERIFY_URL } : undefined,
    push: {
      vapid: c.VAPID_PUBLIC_KEY && c.VAPID_PRIVATE_KEY ? { publicKey: c.VAPID_PUBLIC_KEY.replace(/=+$/, ''), privateKey: c.VAPID_PRIVATE_KEY.replace(/=+$/, '') } : undefined,
      subject: c.VAPID_SUBJECT ?? subjectFromEmail(c.EMAIL_FROM),
      attempts: c.PUSH_ATTEMPTS,
      retryDelayMs: c.PUSH_RETRY_DELAY_MS,
      timeoutMs: c.PUSH_TIMEOUT_MS,
      userLimit: c.PUSH_USER_LIMIT,
      fcm: c.FCM_SERVICE_ACCOUNT !== undefined ? { account: parseServiceAccount(c.FCM_SERVICE_ACCOUNT), origin: trimSlash(c.FCM_ENDPOINT ?? 'https://fcm.googleapis.com') } : undefined,
      apns:
        c.APNS_KEY !== undefined && c.APNS_KEY_ID !== undefined && c.APNS_TEAM_ID !== undefined && c.APNS_TOPIC !== undefined
          ? {
              key: parseApnsKey(c.APNS_KEY),
              keyId: c.APNS_KEY_ID,
              teamId: c.APNS_TEAM_ID,
              topic: c.APNS_TOPIC,
              origin: trimSlash(c.APNS_ENDPOINT ?? (c.APNS_SANDBOX ? 'https://api.sandbox.push.apple.com' : 'https://api.push.apple.com')),
            }
          : undefined,
    },
    previews: {
      timeoutMs: c.PREVIEW_TIMEOUT_MS,
      maxBytes: c.PREVIEW_MAX_BYTES,
      maxRedirects: c.PREVIEW_MAX_REDIRECTS,
      cacheTtlSeconds: c.PREVIEW_CACHE_TTL_SECONDS,
      cacheMax: c.PREVIEW_CACHE_MAX,
      concurrency: c.PREVIEW_CONCURRENCY,
      attempts: c.PREVIEW_ATTEMPTS,
      jobLockMs: c.PREVIEW_JOB_LOCK_MS,
    },
    proxy: {
      maxBytes: c.PROXY_MAX_BYTES,
      cacheBytes: c.PROXY_CACHE_BYTES,
      cacheTtlMs: c.PROXY_CACHE_TTL_SECONDS * 1000,
      concurrency: c.PROXY_CONCURRENCY,
      clientConcurrency: c.PROXY_CLIENT_CONCURRENCY,
      maxPixels: c.PROXY_MAX_PIXELS,
    },
  };
}

/** The voice settings; the schema's refinement already refused VOICE_ENABLED without the LiveKit variables. */
function voiceConfig(c: z.infer<typeof schema>): VoiceConfig {
  if (!c.VOICE_ENABLED) return { enabled: false };
  const { LIVEKIT_URL: url, LIVEKIT_API_KEY: apiKey, LIVEKIT_API_SECRET: apiSecret } = c;
  if (url === undefined || apiKey === undefined || apiSecret === undefined) throw new ConfigError('invalid configuration: VOICE_ENABLED: LiveKit settings missing');
  return { enabled: true, url, apiKey, apiSecret };
}

function trimSlash(s: string): string {
  return s.replace(/\/+$/, '');
}
