/**
 * `npm run accounts -- retention <set|list> …`: the operator sets and lists the retention policies by appending
 * to the `retention` stream directly in the event log (no running service needed; actor null), each change
 * revision-checked and audited like an admin's (`RetentionPolicySet` in the instance audit log).
 *
 *   retention set (--instance | --server ID | --channel ID) (--max-age-seconds N | --forever)
 *   retention list
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.ts';
import { MaxAgeSeconds, type RetentionScope } from '../domain/retention/events.ts';
import type { EventStore } from '../eventstore/port.ts';
import { isUlid } from '../ids.ts';
import { cliRequestId, loadPolicies, setPolicy } from '../compliance/retentionPolicies.ts';
import { openReadableEventStore } from '../service.ts';

export const RETENTION_USAGE = `usage: npm run accounts -- retention set (--instance | --server ID | --channel ID) (--max-age-seconds N | --forever)
  retention list`;

/** Where the command writes (tests pass their own). */
export interface RetentionIo {
  store?: EventStore;
  print?: (line: string) => void;
  error?: (line: string) => void;
}

/** The first event of a channel's own stream says whether it is a DM, group or Saved Notes. */
async function isPrivateChannel(store: EventStore, id: string): Promise<boolean> {
  const [first] = await store.readStream(`channel-${id}`, { maxCount: 1 });
  return first !== undefined && (first.type === 'PrivateChannelOpened' || first.type === 'GroupCreated');
}

/** Runs `retention …`; returns the exit code (0 done, 1 refused, 2 usage). */
export async function runRetention(args: string[], io: RetentionIo = {}): Promise<number> {
  const print = io.print ?? ((l: string) => process.stdout.write(l + '\n'));
  const error = io.error ?? ((l: string) => process.stderr.write(l + '\n'));
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: { instance: { type: 'boolean' }, server: { type: 'string' }, channel: { type: 'string' }, 'max-age-seconds': { type: 'string' }, forever: { type: 'boolean' } },
    });
  } catch (err) {
    error(`${(err as Error).message}\n${RETENTION_USAGE}`);
    return 2;
  }
  const v = parsed.values;
  const [command, ...extra] = parsed.positionals;
  const targets = [v.instance === true, v.server !== undefined, v.channel !== undefined].filter(Boolean).length;
  const ages = [v['max-age-seconds'] !== undefined, v.forever === true].filter(Boolean).length;
  let scope: RetentionScope | undefined;
  let age: number | null = null;
  if (command === 'list' && extra.length === 0 && targets === 0 && ages === 0) {
    // list: nothing else to parse
  } else if (command === 'set' && extra.length === 0 && targets === 1 && ages === 1) {
    scope = v.instance ? { type: 'instance' } : v.server !== undefined ? { type: 'server', id: v.server } : { type: 'channel', id: v.channel! };
    if (scope.type !== 'instance' && !isUlid(scope.id)) {
      error(`not an id: ${scope.id}`);
      return 1;
    }
    if (v.forever !== true) {
      const raw = v['max-age-seconds']!;
      const n = MaxAgeSeconds.safeParse(/^\d+$/.test(raw) ? Number(raw) : NaN);
      if (!n.success || n.data === null) {
        error(`--max-age-seconds must be a whole number of seconds from 1 to 3153600000, not ${raw}`);
        return 2;
      }
      age = n.data;
    }
  } else {
    error(RETENTION_USAGE);
    return 2;
  }
  const store = io.store ?? (await openReadableEventStore(loadConfig()));
  try {
    if (!scope) {
      const p = await loadPolicies(store);
      print(`instance\t${p.instance ?? 'forever'}`);
      for (const [id, s] of Object.entries(p.servers).sort()) print(`server ${id}\t${s}`);
      for (const [id, s] of Object.entries(p.channels).sort()) print(`channel ${id}\t${s}`);
      return 0;
    }
    if (age !== null && scope.type === 'server' && (await store.streamRevision(`server-${scope.id}`)) < 0) {
      error(`no such server: ${scope.id}`);
      return 1;
    }
    if (age !== null && scope.type === 'channel' && (await isPrivateChannel(store, scope.id))) {
      error('DMs, groups and Saved Notes follow the instance default (--instance)');
      return 1;
    }
    const changed = await setPolicy(store, scope, age, { actor: null, requestId: cliRequestId() });
    const what = scope.type === 'instance' ? 'the instance default' : `${scope.type} ${scope.id}`;
    print(changed ? `${what}: ${age === null ? (scope.type === 'instance' ? 'forever' : 'override removed') : `${age} s`}` : `${what} is that already`);
    return 0;
  } finally {
    if (!io.store) await store.close();
  }
}
