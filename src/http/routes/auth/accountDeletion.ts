// Shared by the deletion routes: what deleting an account appends.
import type { Write } from '../../../commands.ts';
import type { DomainEvent } from '../../../domain/events.ts';
import type { AccountState } from '../../../domain/account/state.ts';
import type { AppDeps } from '../../deps.ts';
import { botDeletionWrites, loadOwnedBots } from '../bots/load.ts';

/**
 * Deleting an account: its sessions are revoked, `AccountDeleted` is appended (the personal-data boundary
 * destroys the account's key once it is written, `src/personal/`), its email is released, and every bot it
 * owns is deleted in the same append (`BotDeleted`, username released, `BotDisowned`), so no bot token
 * outlives its owner.
 */
export async function deletionWrites(deps: Pick<AppDeps, 'readModels' | 'store'>, state: AccountState, first: DomainEvent[]): Promise<Write[]> {
  const writes = accountDeletionWrites(state, first);
  writes.push(...(await botDeletionWrites(deps, state.userId, await loadOwnedBots(deps, state.userId))));
  return writes;
}

/** The account's own part of a deletion (sessions revoked, `AccountDeleted`, email released), without its bots. */
export function accountDeletionWrites(state: AccountState, first: DomainEvent[]): Write[] {
  const events: DomainEvent[] = [
    ...first,
    ...Object.keys(state.sessions).map((sessionId) => ({ type: 'SessionRevoked', data: { sessionId } }) as DomainEvent),
    { type: 'AccountDeleted', data: {} },
  ];
  const writes: Write[] = [{ stream: `account-${state.userId}`, scope: state.userId, expected: state.revision, events }];
  if (state.emailKey) writes.push({ stream: `email-${state.emailKey}`, scope: state.userId, expected: 'any', events: [{ type: 'EmailReleased', data: { userId: state.userId } }] });
  return writes;
}
