/**
 * The process entry point: parse the configuration (one clear line and exit 1 when it is wrong), start
 * the roles, stop gracefully on SIGTERM/SIGINT (stop accepting, drain, close Redis and the store).
 */
import { ConfigError, loadConfig } from './config.ts';
import { createLogger } from './log.ts';
import { startService } from './service.ts';

let config;
try {
  config = loadConfig();
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(1);
  }
  throw err;
}

const log = createLogger(config.logLevel, { roles: config.roles.join(',') });
const service = await startService(config, { log });
log.info(
  { api: config.roles.includes('api') ? service.apiUrl : undefined, media: config.roles.includes('media') ? service.mediaUrl : undefined, dataDir: config.dataDir, eventStore: !config.eventStoreUrl ? 'sqlite' : /^postgres(ql)?:/.test(config.eventStoreUrl) ? 'postgres' : 'kurrentdb' },
  'service started',
);

let stopping = false;
for (const sig of ['SIGTERM', 'SIGINT'] as const) {
  process.on(sig, () => {
    if (stopping) return;
    stopping = true;
    log.info({ signal: sig }, 'stopping');
    service
      .stop()
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        log.error({ err }, 'stop failed');
        process.exit(1);
      });
  });
}
