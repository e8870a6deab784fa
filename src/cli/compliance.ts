/**
 * `npm run compliance -- export --from T --to T [--server ID] [--channel ID] [--user ID] [--format jsonl|csv]
 * --out FILE`: the compliance export (`src/compliance/export.ts`) of the service's event log (environment
 * configuration), streamed to a file with a progress bar on the terminal.
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { isMain } from '../built.ts';
import { writeCompliance, type ComplianceFilter, type ComplianceFormat } from '../compliance/export.ts';
import { ConfigError, loadConfig } from '../config.ts';
import { openReadableEventStore } from '../personal/open.ts';
import { progressBar } from './progress.ts';

const USAGE = `usage: npm run compliance -- export --from <ISO time> --to <ISO time> [--server <id>] [--channel <id>] [--user <id>] [--format jsonl|csv] --out <file>`;

class UsageError extends Error {}

/** Parses the export's arguments into a filter and a format (throws UsageError). */
export function parseExportArgs(args: string[]): { filter: ComplianceFilter; format: ComplianceFormat; out: string } {
  const { values } = parseArgs({
    args,
    options: {
      from: { type: 'string' },
      to: { type: 'string' },
      server: { type: 'string' },
      channel: { type: 'string' },
      user: { type: 'string' },
      format: { type: 'string' },
      out: { type: 'string' },
    },
    strict: true,
  });
  const time = (name: string, v: string | undefined) => {
    if (v === undefined) throw new UsageError(`export needs --${name} <ISO time>`);
    const d = new Date(v);
    if (Number.isNaN(d.getTime())) throw new UsageError(`--${name}: "${v}" is not an ISO time`);
    return d;
  };
  const format = values.format ?? 'jsonl';
  if (format !== 'jsonl' && format !== 'csv') throw new UsageError('--format is jsonl or csv');
  if (!values.out) throw new UsageError('export needs --out <file>');
  return {
    filter: {
      from: time('from', values.from),
      to: time('to', values.to),
      ...(values.server !== undefined ? { serverId: values.server } : {}),
      ...(values.channel !== undefined ? { channelId: values.channel } : {}),
      ...(values.user !== undefined ? { userId: values.user } : {}),
    },
    format,
    out: values.out,
  };
}

async function main(): Promise<number> {
  const [command, ...rest] = process.argv.slice(2);
  if (command !== 'export') {
    console.error(USAGE);
    return 2;
  }
  const { filter, format, out } = parseExportArgs(rest);
  const config = loadConfig();
  const store = await openReadableEventStore(config);
  try {
    const total = await store.headPosition();
    const bar = progressBar('compliance export', undefined);
    const file = fs.createWriteStream(out);
    const n = await writeCompliance(store, file, filter, format, { onProgress: (k) => bar.update(k) });
    bar.stop();
    await new Promise<void>((resolve, reject) => {
      file.once('error', reject);
      file.end(() => resolve());
    });
    console.error(`exported ${n} rows (log head ${total ?? 'empty'}) to ${out}`);
    return 0;
  } finally {
    await store.close();
  }
}

if (isMain(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      if (err instanceof ConfigError || err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
        console.error(err instanceof Error ? err.message : String(err));
        console.error(USAGE);
        process.exit(2);
      }
      console.error(err instanceof Error ? err.message : String(err));
      process.exit(1);
    },
  );
}
