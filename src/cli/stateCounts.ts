/**
 * Counts of a read-model generation for `events state`: accounts and users now; servers, channels,
 * roles and members once their projections exist (the key families of `rm` in src/readmodel/keys.ts).
 */
import type { Redis } from 'ioredis';

/** Counts what the read models under `genPrefix` describe. */
export async function countReadModels(redis: Redis, genPrefix: string): Promise<Record<string, number>> {
  const families = new Map<string, number>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${genPrefix}*`, 'COUNT', 1000);
    cursor = next;
    for (const k of keys) {
      const parts = k.slice(genPrefix.length).split(':');
      if (parts.length !== 2) continue;
      families.set(parts[0]!, (families.get(parts[0]!) ?? 0) + 1);
    }
  } while (cursor !== '0');
  return { accounts: families.get('account') ?? 0, users: families.get('user') ?? 0 };
}
