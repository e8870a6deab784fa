/** What the HTTP apps need, built once by the composition root (`src/main.ts`) or by tests. */
import type { CommandExecutor } from '../commands.ts';
import type { Config } from '../config.ts';
import type { EventStore } from '../eventstore/port.ts';
import type { IdempotencyStore } from '../idempotency/store.ts';
import type { Logger } from '../log.ts';
import type { RateLimiter } from '../ratelimit/limiter.ts';
import type { ReadModels } from '../readmodel/reader.ts';
import type { ServiceSecrets } from '../domain/account/secrets.ts';
import type { MailQueue } from '../mail/queue.ts';
import type { KeyStore } from '../personal/keyStore.ts';
import type { SearchReader } from '../search/reader.ts';
import type { VapidDetails } from '../push/vapid.ts';

/** Dependencies of the API and media apps. */
export interface AppDeps {
  config: Config;
  log: Logger;
  store: EventStore;
  readModels: ReadModels;
  executor: CommandExecutor;
  limiter: RateLimiter;
  idempotency: IdempotencyStore;
  /** Clock in milliseconds (injectable for tests). */
  now: () => number;
  /** Per-account keys of personal data (crypto-shredding). */
  keys: KeyStore;
  /** Keys derived from SECRETS_KEY (TOTP secrets at rest, keyed email digests). */
  secrets: ServiceSecrets;
  /** Outgoing mail; undefined when SMTP_URL is not set. */
  mail: MailQueue | undefined;
  /** Web Push signing keys (the public key is `vapid` in `GET /`). */
  vapid?: VapidDetails;
  /** The message search index (API role; `DATA_DIR/search.sqlite`, kept by the projector role's indexer). */
  search?: SearchReader;
}
