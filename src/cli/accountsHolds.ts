/**
 * `npm run accounts -- hold <add|lift|list> …`: the operator places and lifts legal holds (issue 39 part 2) by
 * appending to the `holds` stream directly in the event log, revision-checked (no running service needed; a
 * running one projects the change and audits it like any other event). The actor of these events is null:
 * the operator. The log is opened through the personal-data boundary, so lifting the last hold on a deleted
 * account destroys its personal-data key here and now.
 *
 *   hold add (--server ID | --channel ID | --user ID) --name N --reason R   prints the new hold's id
 *   hold lift ID [--reason R]
 *   hold list [--active]
 */
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { loadHolds, targetExists } from '../compliance/holdLog.ts';
import { loadConfig } from '../config.ts';
import { toNewEvent, type DomainEvent } from '../domain/events.ts';
import { decideLiftHold, decidePlaceHold } from '../domain/hold/decide.ts';
import { HOLDS_STREAM, HoldName, HoldReason, HoldTarget } from '../domain/hold/events.ts';
import { INSTANCE_SCOPE } from '../domain/moderation/events.ts';
import { AppError } from '../errors.ts';
import type { EventStore } from '../eventstore/port.ts';
import { WrongExpectedRevisionError } from '../eventstore/port.ts';
import { isUlid, newId } from '../ids.ts';
import { openReadableEventStore } from '../personal/open.ts';

export const HOLD_USAGE = `usage: npm run accounts -- hold <add|lift|list> …
  hold add (--server ID | --channel ID | --user ID) --name NAME --reason REASON   (prints the hold's id)
  hold lift HOLD_ID [--reason REASON]
  hold list [--active]`;

/** Where the command reads and writes (tests pass their own store, opened through the personal-data boundary). */
export interface HoldIo {
  store?: EventStore;
  print?: (line: string) => void;
  error?: (line: string) => void;
}

/** Runs `hold …`; returns the exit code (0 done, 1 refused, 2 usage). */
export async function runHold(args: string[], io: HoldIo = {}): Promise<number> {
  const print = io.print ?? ((l: string) => process.stdout.write(l + '\n'));
  const error = io.error ?? ((l: string) => process.stderr.write(l + '\n'));
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        server: { type: 'string' },
        channel: { type: 'string' },
        user: { type: 'string' },
        name: { type: 'string' },
        reason: { type: 'string' },
        active: { type: 'boolean' },
      },
    });
  } catch (err) {
    error(`${(err as Error).message}\n${HOLD_USAGE}`);
    return 2;
  }
  const v = parsed.values;
  const [command, holdId, ...extra] = parsed.positionals;
  const kinds = (['server', 'channel', 'user'] as const).filter((k) => v[k] !== undefined);
  let event: (holds: Parameters<typeof decidePlaceHold>[0]) => DomainEvent[];
  let done: string;
  if (command === 'add' && holdId === undefined && kinds.length === 1 && v.active === undefined) {
    const target = HoldTarget.safeParse({ type: kinds[0], id: v[kinds[0]!] });
    const name = HoldName.safeParse(v.name);
    const reason = HoldReason.safeParse(v.reason);
    if (!target.success || !name.success || !reason.success) {
      error(!target.success ? `not an id: ${v[kinds[0]!]}` : !name.success ? '--name: 1–100 characters' : '--reason: 1–512 characters');
      error(HOLD_USAGE);
      return 2;
    }
    const id = newId();
    event = (holds) => decidePlaceHold(holds, { id, name: name.data, reason: reason.data, target: target.data });
    done = id;
  } else if (command === 'lift' && holdId !== undefined && extra.length === 0 && kinds.length === 0 && v.name === undefined && v.active === undefined) {
    const reason = v.reason === undefined ? null : HoldReason.safeParse(v.reason);
    if (!isUlid(holdId) || (reason !== null && !reason.success)) {
      error(!isUlid(holdId) ? `not a hold id: ${holdId}` : '--reason: 1–512 characters');
      return 2;
    }
    event = (holds) => decideLiftHold(holds, { id: holdId, reason: reason?.data ?? null });
    done = `lifted ${holdId}`;
  } else if (command === 'list' && holdId === undefined && kinds.length === 0 && v.name === undefined && v.reason === undefined) {
    event = () => [];
    done = '';
  } else {
    error(HOLD_USAGE);
    return 2;
  }
  const store = io.store ?? (await openReadableEventStore(loadConfig()));
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      const { holds, expected } = await loadHolds(store);
      if (command === 'list') {
        for (const h of [...holds.values()].reverse()) {
          if (v.active && h.lifted_at !== null) continue;
          print([h._id, h.lifted_at === null ? 'active' : `lifted ${h.lifted_at}`, `${h.target.type}:${h.target.id}`, h.placed_at, h.name, h.reason].join('\t'));
        }
        return 0;
      }
      let events: DomainEvent[];
      try {
        events = event(holds);
        if (command === 'add') {
          const placed = events[0] as { data: { target: HoldTarget } };
          if (!(await targetExists(store, placed.data.target))) throw new AppError({ type: 'NotFound' });
        }
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        const type = err.body.type;
        error(type === 'NotFound' ? (command === 'add' ? `no such ${kinds[0]}: ${v[kinds[0]!]}` : `no such hold: ${holdId}`) : type === 'NoEffect' ? `${holdId} is already lifted` : type);
        return 1;
      }
      const meta = { actor: null, requestId: `cli-${randomUUID()}`, at: new Date().toISOString(), scope: INSTANCE_SCOPE };
      try {
        await store.append(HOLDS_STREAM, events.map((e) => toNewEvent(e, meta)), expected);
      } catch (err) {
        if (err instanceof WrongExpectedRevisionError) continue;
        throw err;
      }
      print(done);
      return 0;
    }
    error('the holds changed concurrently five times; try again');
    return 1;
  } finally {
    if (!io.store) await store.close();
  }
}
