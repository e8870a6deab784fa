/**
 * Decider tests for the server aggregate: `given(events)` folds the events into the view a decision sees
 * (`evolveView`), `.as(userId)` computes the caller's facts from that view exactly as `src/access.ts` does,
 * and `.when(decide).then(events)` / `.thenThrows({type})` assert the outcome. No Redis, no clock.
 */
import type tap from 'tap';
import type { DomainEvent } from '../../src/domain/events.ts';
import type { CallerFacts } from '../../src/domain/server/caller.ts';
import { rankingOf, serverPermissionsOf } from '../../src/domain/server/permissions.ts';
import { evolveView, type ServerView } from '../../src/domain/server/state.ts';
import { AppError, type ErrorBody } from '../../src/errors.ts';

/** The assertions used (both the root `t` and subtests provide them). */
export type Asserts = Pick<typeof tap, 'same' | 'match' | 'fail'>;

/** A fixed clock for decisions (ms). */
export const NOW = Date.parse('2030-01-01T00:00:00.000Z');

/** Folds events into a view (revision = index). */
export function viewOf(events: DomainEvent[]): ServerView {
  let view: ServerView | null = null;
  events.forEach((e, i) => (view = evolveView(view, e, i)));
  if (!view) throw new Error('the given events leave no server');
  return view;
}

/** The caller facts of `userId` in a view at `NOW` (server-level value). */
export function callerIn(view: ServerView, userId: string, nowMs = NOW): CallerFacts {
  const member = view.members[userId];
  return {
    userId,
    permissions: serverPermissionsOf(view.server, userId, member, nowMs),
    ranking: rankingOf(view.server, userId, member),
    isOwner: view.server.owner === userId,
  };
}

/** given(events).as(user).when((view, caller) => decide(...)).then(t, events) / .thenThrows(t, {type}). */
export function given(events: DomainEvent[]) {
  const view = viewOf(events);
  const run = (fn: (view: ServerView, caller: CallerFacts | undefined) => DomainEvent[], caller: CallerFacts | undefined) => ({
    /** Asserts the decided events (exactly). */
    then(t: Asserts, expected: DomainEvent[], message?: string) {
      return t.same(fn(view, caller), expected, message ?? 'decided events');
    },
    /** Asserts the decision throws an AppError whose body matches. */
    thenThrows(t: Asserts, body: Partial<ErrorBody>, message?: string) {
      return expectError(t, () => fn(view, caller), body, message);
    },
  });
  return {
    view,
    /** Decides as this user (facts computed from the view). */
    as(userId: string, nowMs = NOW) {
      const caller = callerIn(view, userId, nowMs);
      return { caller, when: (fn: (view: ServerView, caller: CallerFacts) => DomainEvent[]) => run((v, c) => fn(v, c!), caller) };
    },
    /** Decides without a caller. */
    when: (fn: (view: ServerView) => DomainEvent[]) => run((v) => fn(v), undefined),
  };
}

/** Asserts that `fn` throws an AppError whose body matches `body`. */
export function expectError(t: Asserts, fn: () => unknown, body: Partial<ErrorBody>, message?: string) {
  try {
    const out = fn();
    return t.fail(`${message ?? 'decision'}: expected ${JSON.stringify(body)}, got ${JSON.stringify(out)}`);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return t.match(err.body, body, message ?? 'decision error');
  }
}
