// POST /sync/settings/fetch — {keys} → {key: [timestamp, value]} for the keys the caller has stored.
import { fetchSettings } from '../../../readmodel/unreads.ts';
import { defineRoute } from '../../route.ts';
import { FetchSettingsBody } from './schemas.ts';

export default defineRoute({
  method: 'POST',
  path: '/sync/settings/fetch',
  auth: 'user',
  body: FetchSettingsBody,
  async handler({ deps, caller, body }) {
    // Object.fromEntries defines own properties, so a key such as `__proto__` is data, not a prototype.
    return Object.fromEntries(await fetchSettings(deps.readModels, caller.userId, body.keys));
  },
});
