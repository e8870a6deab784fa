// POST /sync/settings/set?timestamp= — {key: "value"} (the web client: {timestamp, key: "value"}) → 204; UserSettingsUpdate to the caller's sockets.
import { decideSetSettings } from '../../../domain/settings/setSettings.ts';
import { settingsStream } from '../../../domain/settings/events.ts';
import { rm } from '../../../readmodel/keys.ts';
import { expectedOf } from '../../command.ts';
import { defineRoute, NO_CONTENT } from '../../route.ts';
import { SetSettingsBody, SetSettingsQuery } from './schemas.ts';

export default defineRoute({
  method: 'POST',
  path: '/sync/settings/set',
  auth: 'user',
  body: SetSettingsBody,
  query: SetSettingsQuery,
  async handler(rc) {
    const { deps, caller, body, query } = rc;
    const stream = settingsStream(caller.userId);
    // Decided on the stream's revision, so the per-user key limit holds under concurrent writes.
    await deps.executor.execute(rc.meta, [stream], async () => {
      const revision = (await deps.readModels.getJson<number>(rm.userSettingsRevision(caller.userId))) ?? -1;
      const stored = await deps.readModels.redis.hkeys(deps.readModels.key(rm.userSettings(caller.userId)));
      const events = decideSetSettings({ settings: body.pairs, timestamp: query.timestamp ?? body.timestamp }, new Set(stored), { now: deps.now() });
      return { writes: [{ stream, scope: caller.userId, expected: expectedOf(revision), events }], result: undefined };
    });
    return NO_CONTENT;
  },
});
