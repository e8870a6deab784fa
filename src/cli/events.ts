/**
 * `npm run events -- <command>`: the operator's tool over the event log, using the service's
 * configuration (environment).
 *
 *   tail    [--stream <name|prefix->] [--type <T,…>] [--after <position> | --from-start]
 *   export  [--stream <name>] [--after <position>] [--out <file>]         NDJSON, streamed
 *   state   --at <position|ISO time> [--server <id>] [--keep]              read models as they were
 *   migrate --to <kurrentdb://…|sqlite:<path>> [--from <url>]             copy the whole history
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import { openReadableEventStore } from '../personal/open.ts';
import { exportEvents, findPosition, migrate, openStoreUrl, tailEvents, toLine } from './eventsLib.ts';
import { progressBar } from './progress.ts';
import { stateAt } from './stateCounts.ts';

const USAGE = `usage: npm run events -- <tail|export|state|migrate> [options]
  tail    [--stream <name|prefix->] [--type <Type,…>] [--after <position> | --from-start]
  export  [--stream <name>] [--after <position>] [--out <file>]
  state   --at <position|ISO time> [--server <id>] [--keep]
  migrate --to <kurrentdb://…|sqlite:<path>> [--from <url>]`;

async function main(): Promise<number> {
  const [command, ...rest] = process.argv.slice(2);
  const { values } = parseArgs({
    args: rest,
    options: {
      stream: { type: 'string' },
      type: { type: 'string' },
      after: { type: 'string' },
      'from-start': { type: 'boolean' },
      out: { type: 'string' },
      at: { type: 'string' },
      keep: { type: 'boolean' },
      server: { type: 'string' },
      to: { type: 'string' },
      from: { type: 'string' },
    },
    strict: true,
  });
  if (!command || !['tail', 'export', 'state', 'migrate'].includes(command)) {
    console.error(USAGE);
    return 2;
  }
  const config = loadConfig();
  const after = values.after !== undefined ? BigInt(values.after) : undefined;
  // Reads open personal fields through the key store; migrate copies the stored (sealed) form as it is.
  const store = await openReadableEventStore(config, values.from ? await openStoreUrl(values.from) : undefined);
  try {
    switch (command) {
      case 'tail': {
        let fatal: Error | undefined;
        let wake = () => {};
        const stop = await tailEvents(
          store,
          {
            ...(values.stream ? { stream: values.stream } : {}),
            ...(values.type ? { types: values.type.split(',') } : {}),
            ...(after !== undefined ? { after } : {}),
            fromStart: values['from-start'] ?? false,
          },
          (e) => process.stdout.write(toLine(e) + '\n'),
          {
            onResubscribe: (err, n) => console.error(`subscription dropped (${err.message}); resubscribing (${n})`),
            onFatal: (err) => {
              fatal = err;
              wake();
            },
          },
        );
        console.error('tailing; Ctrl-C to stop');
        await new Promise<void>((resolve) => {
          wake = resolve;
          process.once('SIGINT', resolve);
          process.once('SIGTERM', resolve);
        });
        await stop();
        if (fatal) {
          console.error(`tail stopped: ${(fatal as Error).message}`);
          return 1;
        }
        return 0;
      }
      case 'export': {
        const out = values.out ? fs.createWriteStream(values.out) : process.stdout;
        const bar = progressBar('export', undefined);
        const n = await exportEvents(store, out, {
          ...(values.stream ? { stream: values.stream } : {}),
          ...(after !== undefined ? { after } : {}),
          onProgress: (k) => bar.update(k),
        });
        bar.stop();
        if (values.out) await new Promise<void>((r) => (out as fs.WriteStream).end(() => r()));
        console.error(`exported ${n} events`);
        return 0;
      }
      case 'state': {
        if (!values.at) throw new UsageError('state needs --at <position|ISO time>');
        const position = /^\d+$/.test(values.at) ? BigInt(values.at) : await findPosition(store, parseTime(values.at));
        if (position === undefined) {
          console.log(`no events at or before ${values.at}`);
          return 0;
        }
        const bar = progressBar('state', undefined);
        const result = await stateAt({
          store,
          redisUrl: config.redisUrl,
          prefix: config.redisPrefix,
          position,
          ...(values.server !== undefined ? { serverId: values.server } : {}),
          keep: values.keep ?? false,
          log: createLogger('warn'),
          onProgress: (n) => bar.update(n),
        });
        bar.stop();
        console.log(JSON.stringify(result));
        if (result.kept) console.error(`read models kept as generation ${result.kept_generation} under ${result.prefix} (main slot ${result.kept}, the keys of a server, user or channel in its shard {g${result.kept_generation}.<s>.<k>}; delete everything under ${result.prefix} when done)`);
        return 0;
      }
      case 'migrate': {
        if (!values.to) throw new UsageError('migrate needs --to <url>');
        const target = await openStoreUrl(values.to);
        const bar = progressBar('migrate', undefined);
        try {
          const r = await migrate(store.inner, target, {
            checkpointDir: config.dataDir,
            targetId: values.to,
            onProgress: (c, s) => bar.update(c + s),
          });
          bar.stop();
          console.log(`copied ${r.copied} events, ${r.skipped} already present`);
        } finally {
          await target.close();
        }
        return 0;
      }
    }
    return 2;
  } finally {
    await store.close();
  }
}

class UsageError extends Error {}

function parseTime(s: string): Date {
  const d = new Date(s);
  if (Number.isNaN(d.getTime())) throw new UsageError(`--at: "${s}" is neither a position nor an ISO time`);
  return d;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof ConfigError || err instanceof UsageError) {
      console.error(err.message);
      process.exit(2);
    }
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  },
);
