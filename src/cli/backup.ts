/**
 * `npm run backup -- --to DIR`: a consistent online backup of the configured data directory while the service
 * runs (src/backup/backup.ts), with `manifest.json`. Uses the same configuration (environment) as the service.
 */
import { ConfigError, loadConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import { takeBackup } from '../backup/backup.ts';

const args = process.argv.slice(2);
const at = args.indexOf('--to');
const to = at >= 0 ? args[at + 1] : undefined;
try {
  if (!to) throw new ConfigError('usage: npm run backup -- --to DIR (a new or empty directory)');
  const config = loadConfig();
  const { manifest, notes } = await takeBackup(config, to, createLogger(process.env.LOG_LEVEL ?? 'warn'));
  for (const n of notes) console.log(n);
  console.log(`backup of ${manifest.store} in ${to}: ${manifest.log ? `${manifest.events} events up to position ${manifest.head ?? 'none'}, ` : ''}the key store, ${manifest.files} files (${manifest.takenAt})`);
  process.exit(0);
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : `backup failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
