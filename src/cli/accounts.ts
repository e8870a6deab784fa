/**
 * Operator commands for accounts: `npm run accounts -- <group> <command>`.
 *
 *   invite create        prints a new single-use account invite code (for INVITE_ONLY=true)
 *   invite list          lists created invites: code, created at, used by (codes of ACCOUNT_INVITES are not listed)
 *   admin grant|revoke|list …   instance moderators and admins (src/cli/accountsAdmin.ts)
 *   policy add|list …    the policy changes of POLICY_CHANGES (src/cli/accountsPolicy.ts)
 *   hold add|lift|list … legal holds on a server, a channel or a user (src/cli/accountsHolds.ts)
 *   retention set|list … the message retention policies (src/cli/accountsRetention.ts)
 */
import { randomBytes } from 'node:crypto';
import { isMain } from '../built.ts';
import { loadConfig } from '../config.ts';
import { toNewEvent } from '../domain/events.ts';
import { newId } from '../ids.ts';
import { decryptSecret, encryptSecret } from '../personal/cipher.ts';
import { openReadableEventStore, serviceSecrets } from '../personal/open.ts';
import { accountInviteStream } from '../http/routes/auth/accountCreate.ts';
import type { EventStore } from '../eventstore/port.ts';
import type { ServiceSecrets } from '../domain/account/secrets.ts';

import { ADMIN_USAGE, runAdmin } from './accountsAdmin.ts';
import { POLICY_USAGE, runPolicy } from './accountsPolicy.ts';
import { HOLD_USAGE, runHold } from './accountsHolds.ts';
import { RETENTION_USAGE, runRetention } from './accountsRetention.ts';

const USAGE = `usage: npm run accounts -- invite create | invite list\n${ADMIN_USAGE}\n${POLICY_USAGE}\n${HOLD_USAGE}\n${RETENTION_USAGE}`;

/** Creates an invite and returns its code. */
export async function createAccountInvite(store: EventStore, secrets: ServiceSecrets): Promise<string> {
  const code = randomBytes(15).toString('base64url');
  const event = toNewEvent(
    { type: 'AccountInviteCreated', data: { code: encryptSecret(secrets.totpKey, 'invite', code) } },
    { actor: null, requestId: `cli-${newId()}`, at: new Date().toISOString(), scope: 'accountinvites' },
  );
  await store.append(accountInviteStream(code), [event], 'no_stream');
  return code;
}

/** Every created invite, oldest first: its code, when it was created and who used it. */
export async function listAccountInvites(store: EventStore, secrets: ServiceSecrets): Promise<Array<{ code: string; createdAt: string; usedBy: string | null }>> {
  const byStream = new Map<string, { code: string; createdAt: string; usedBy: string | null }>();
  for await (const e of store.readAll()) {
    if (!e.stream.startsWith('accountinvite-')) continue;
    if (e.type === 'AccountInviteCreated') {
      const code = decryptSecret(secrets.totpKey, 'invite', (e.data as { code: string }).code) ?? '(undecryptable: SECRETS_KEY changed)';
      byStream.set(e.stream, { code, createdAt: e.metadata.at, usedBy: null });
    } else if (e.type === 'AccountInviteUsed') {
      const inv = byStream.get(e.stream);
      if (inv) inv.usedBy = (e.data as { userId: string }).userId;
    }
  }
  return [...byStream.values()];
}

/** Runs one command; returns the exit code. Other command groups are dispatched here too. */
export async function runAccounts(args: string[], out: (line: string) => void = (l) => console.log(l)): Promise<number> {
  const [group, command] = args;
  if (group === 'admin') return runAdmin(args.slice(1));
  if (group === 'hold') return runHold(args.slice(1), { print: out });
  if (group === 'retention') return runRetention(args.slice(1), { print: out });
  if (group === 'policy') return runPolicy(args.slice(1), loadConfig().policyChangesFile, { print: out });
  if (group !== 'invite' || (command !== 'create' && command !== 'list')) {
    console.error(USAGE);
    return 2;
  }
  const config = loadConfig();
  const store = await openReadableEventStore(config);
  try {
    const secrets = await serviceSecrets(config, store.keys);
    if (command === 'create') out(await createAccountInvite(store, secrets));
    else for (const i of await listAccountInvites(store, secrets)) out(`${i.code}\t${i.createdAt}\t${i.usedBy ? `used by ${i.usedBy}` : 'unused'}`);
    return 0;
  } finally {
    await store.close();
  }
}

if (isMain(import.meta.url)) {
  runAccounts(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : String(err));
      process.exit(1);
    },
  );
}
