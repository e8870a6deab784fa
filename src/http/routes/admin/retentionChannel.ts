// PUT /admin/retention/channels/:channel_id — sets or (null) removes a server channel's override; DMs and groups follow the instance default (instance admins).
import { AppError } from '../../../errors.ts';
import type { ChannelState } from '../../../domain/channel/state.ts';
import { rm } from '../../../readmodel/keys.ts';
import { defineRoute } from '../../route.ts';
import { callerRole, pathId, staffOnly } from './staff.ts';
import { RetentionBody, setPolicyRoute } from './retention.ts';

export default defineRoute({
  method: 'PUT',
  path: '/admin/retention/channels/:channel_id',
  auth: 'user',
  authorize: staffOnly('admin'),
  body: RetentionBody,
  async handler(rc) {
    await callerRole(rc, 'admin');
    const channelId = pathId(rc.params.channel_id);
    if (rc.body.max_age_seconds !== null) {
      if (!(await rc.deps.readModels.getJson<ChannelState>(rm.channel(channelId)))) {
        // A DM, group or Saved Notes follows the instance default: no override of its own.
        if (await rc.deps.readModels.getJson(rm.privateChannel(channelId))) throw new AppError({ type: 'InvalidOperation' });
        throw new AppError({ type: 'NotFound' });
      }
    }
    return setPolicyRoute(rc, { type: 'channel', id: channelId }, rc.body.max_age_seconds);
  },
});
