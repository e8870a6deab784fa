/**
 * `npm run accounts -- admin <grant|revoke|list> …`: the operator grants and revokes instance roles
 * (moderator, admin) by appending to `instance-staff` directly in the event log (no running service needed;
 * a running one projects the change like any other event). The actor of these events is null: the operator.
 *
 *   admin grant  <user> [--role moderator|admin]   (default moderator; granting again changes the role)
 *   admin revoke <user>
 *   admin list
 *
 * `<user>` is a user id or `username#discriminator`.
 */
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { loadConfig } from '../config.ts';
import { toNewEvent, type DomainEvent } from '../domain/events.ts';
import { foldStaff } from '../domain/moderation/decide.ts';
import { INSTANCE_SCOPE, InstanceRole, STAFF_STREAM } from '../domain/moderation/events.ts';
import type { EventStore } from '../eventstore/port.ts';
import { WrongExpectedRevisionError } from '../eventstore/port.ts';
import { isUlid } from '../ids.ts';
import { openEventStore } from '../eventstore/open.ts';

export const ADMIN_USAGE = `usage: npm run accounts -- admin <grant|revoke|list> …
  admin grant  <user id | username#discriminator> [--role moderator|admin]
  admin revoke <user id | username#discriminator>
  admin list`;

/** Where the command writes (tests pass their own). */
export interface AdminIo {
  store?: EventStore;
  print?: (line: string) => void;
  error?: (line: string) => void;
}

/** A user id for `<user>`, or null when no such account exists. */
async function resolveUser(store: EventStore, user: string): Promise<string | null> {
  const hash = user.lastIndexOf('#');
  if (hash > 0) {
    const name = user.slice(0, hash).toLowerCase();
    const discriminator = user.slice(hash + 1);
    const claims = await store.readStream(`username-${name}`);
    const claim = claims.find((e) => e.type === 'UsernameClaimed' && (e.data as { discriminator: string }).discriminator === discriminator);
    return claim ? (claim.data as { userId: string }).userId : null;
  }
  if (!isUlid(user)) return null;
  return (await store.streamRevision(`account-${user}`)) >= 0 ? user : null;
}

/** Runs `admin …`; returns the exit code (0 done, 1 refused, 2 usage). */
export async function runAdmin(args: string[], io: AdminIo = {}): Promise<number> {
  const print = io.print ?? ((l: string) => process.stdout.write(l + '\n'));
  const error = io.error ?? ((l: string) => process.stderr.write(l + '\n'));
  let parsed;
  try {
    parsed = parseArgs({ args, allowPositionals: true, options: { role: { type: 'string' } } });
  } catch (err) {
    error(`${(err as Error).message}\n${ADMIN_USAGE}`);
    return 2;
  }
  const [command, user, ...extra] = parsed.positionals;
  const role = InstanceRole.safeParse(parsed.values.role ?? 'moderator');
  if (!role.success || extra.length > 0 || (command !== 'list' && !user) || (command === 'list' && user) || !['grant', 'revoke', 'list'].includes(command ?? '')) {
    error(ADMIN_USAGE);
    return 2;
  }
  const store = io.store ?? (await openEventStore(loadConfig()));
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      const history = await store.readStream(STAFF_STREAM);
      const staff = foldStaff(history);
      if (command === 'list') {
        for (const [id, r] of [...staff].sort()) print(`${id}\t${r}`);
        return 0;
      }
      const userId = await resolveUser(store, user!);
      if (!userId) {
        error(`no such user: ${user}`);
        return 1;
      }
      let event: DomainEvent;
      if (command === 'grant') {
        if (staff.get(userId) === role.data) {
          print(`${userId} already has ${role.data}`);
          return 0;
        }
        event = { type: 'InstanceRoleGranted', data: { userId, role: role.data } };
      } else {
        if (!staff.has(userId)) {
          print(`${userId} has no instance role`);
          return 0;
        }
        event = { type: 'InstanceRoleRevoked', data: { userId } };
      }
      const meta = { actor: null, requestId: `cli-${randomUUID()}`, at: new Date().toISOString(), scope: INSTANCE_SCOPE };
      try {
        await store.append(STAFF_STREAM, [toNewEvent(event, meta)], history.length === 0 ? 'no_stream' : history[history.length - 1]!.revision);
      } catch (err) {
        if (err instanceof WrongExpectedRevisionError) continue;
        throw err;
      }
      print(command === 'grant' ? `granted ${role.data} to ${userId}` : `revoked the instance role of ${userId}`);
      return 0;
    }
    error('the staff changed concurrently five times; try again');
    return 1;
  } finally {
    if (!io.store) await store.close();
  }
}
