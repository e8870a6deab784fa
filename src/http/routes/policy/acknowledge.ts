// POST /policy/acknowledge — the caller has seen every current policy change: Ready stops showing them (204).
import { ulidTime } from '../../../ids.ts';
import { newestPolicyChange, policySource } from '../../../users/policy.ts';
import { loadAccount } from '../auth/accountLoad.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';

export default defineRoute({
  method: 'POST',
  path: '/policy/acknowledge',
  auth: 'user',
  async handler({ deps, caller, meta }) {
    const stream = `account-${caller.userId}`;
    await deps.executor.execute(meta, [stream], async () => {
      const state = await loadAccount(deps, caller.userId);
      const list = policySource(deps.config.policyChangesFile).list();
      const current = state.policyAckedUpTo !== undefined ? Date.parse(state.policyAckedUpTo) : ulidTime(caller.userId);
      // As Stoat, the mark moves to the newest change; it never moves back (an emptied list shows nothing again).
      const upTo = Math.max(current, newestPolicyChange(list));
      const events = upTo === current && state.policyAckedUpTo !== undefined ? [] : [{ type: 'PolicyChangesAcknowledged' as const, data: { upTo: new Date(upTo).toISOString() } }];
      return { writes: events.length ? [{ stream, scope: caller.userId, expected: state.revision, events }] : [], result: undefined };
    });
    return NO_CONTENT;
  },
});
