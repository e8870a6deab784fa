/**
 * `npm run restore -- --from DIR`: restores a backup into the configured data directory, fresh or existing, with
 * no service process running on it (src/backup/backup.ts). The next start rebuilds the read models.
 */
import { ConfigError, loadConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import { restoreBackup } from '../backup/backup.ts';

const args = process.argv.slice(2);
const at = args.indexOf('--from');
const from = at >= 0 ? args[at + 1] : undefined;
try {
  if (!from) throw new ConfigError('usage: npm run restore -- --from DIR (a directory written by npm run backup)');
  const config = loadConfig();
  const r = await restoreBackup(config, from, createLogger(process.env.LOG_LEVEL ?? 'warn'));
  for (const n of r.notes) console.log(n);
  console.log(
    `restored the backup of ${r.manifest.takenAt} into ${config.dataDir}${r.manifest.log ? ` (${r.manifest.events} events up to position ${r.manifest.head ?? 'none'})` : ''}; ` +
      `${r.reapplied.length} account deletion(s) made after it re-applied. The next start rebuilds the read models.`,
  );
  process.exit(0);
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : `restore failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
