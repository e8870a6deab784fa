/**
 * What the operator tools open: the event store behind the personal-data boundary and the service keys. Kept
 * apart from `src/service.ts` so that a CLI loads the store, the key store and the ciphers, not the HTTP app,
 * the gateway, the workers and their libraries (a CLI run took 3.5 s of CPU before it did anything; issue 40).
 */
import type { Config } from '../config.ts';
import { deriveSecrets, type ServiceSecrets } from '../domain/account/secrets.ts';
import { openEventStore } from '../eventstore/open.ts';
import type { EventStore } from '../eventstore/port.ts';
import { openConfiguredKeyStore, type KeyStore } from './keyStore.ts';
import { PersonalDataStore } from './store.ts';

/** The service keys: from SECRETS_KEY, or from a master secret generated once and kept in the key store. */
export async function serviceSecrets(config: Config, keys: KeyStore): Promise<ServiceSecrets> {
  return deriveSecrets(config.secretsKey ?? (await keys.serviceSecret('master', 32)));
}

/** The event store behind the personal-data boundary (what the operator tools read through). */
export async function openReadableEventStore(config: Config, raw?: EventStore): Promise<PersonalDataStore> {
  return new PersonalDataStore(raw ?? (await openEventStore(config)), await openConfiguredKeyStore(config), { contentBucketMs: config.retentionBucketMs });
}

export { openEventStore };
