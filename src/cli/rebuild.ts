/**
 * `npm run rebuild`: replays the whole log from position 0 into a fresh read-model generation and swaps
 * it in, with a progress bar. Uses the same configuration (environment) as the service.
 */
import { ConfigError, loadConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import { openReadableEventStore } from '../personal/open.ts';
import { rebuild } from '../../projections/rebuild.ts';
import { PROJECTIONS } from '../../projections/index.ts';
import { progressBar } from './progress.ts';

try {
  const config = loadConfig();
  const log = createLogger(process.env.LOG_LEVEL ?? 'warn');
  const store = await openReadableEventStore(config);
  let count = 0;
  for await (const _ of store.readAll()) count++;
  const bar = progressBar('rebuild', count);
  const r = await rebuild({
    store,
    redisUrl: config.redisUrl,
    prefix: config.redisPrefix,
    partitions: config.projectorPartitions,
    projections: PROJECTIONS,
    log,
    onProgress: (p) => bar.update(p.events),
  });
  bar.update(count);
  bar.stop();
  console.log(`rebuilt ${r.events} events into generation ${r.generation} (was ${r.previous ?? 'none'}) in ${(r.ms / 1000).toFixed(1)} s, ${Math.round(r.events / Math.max(0.001, r.ms / 1000))} events/s`);
  await store.close();
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(1);
  }
  throw err;
}
