/** SetChannelDefaultPermissions: PUT /channels/:id/permissions/default (reference §3.6, §4.4). */
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission, requireCanGrant, type Override } from '../../permissions/calculate.ts';
import type { CallerContext } from '../server/caller.ts';
import { toOverride, toOverrideField } from '../server/permissions.ts';
import type { DomainEvent } from '../events.ts';
import type { ChannelState } from './state.ts';

/** Input of SetChannelDefaultPermissions: a parsed override. */
export interface SetChannelDefaultPermissions {
  permissions: Override;
}

/** ManagePermissions in the channel; newly granted or un-denied bits the caller lacks → 403 CannotGiveMissingPermissions. */
export function decideSetChannelDefaultPermissions(cmd: SetChannelDefaultPermissions, channel: ChannelState, ctx: CallerContext): DomainEvent[] {
  requirePermission(ctx.caller.permissions, Permission.ManagePermissions);
  const current = channel.default_permissions ? toOverride(channel.default_permissions) : undefined;
  requireCanGrant(ctx.caller.permissions, current, cmd.permissions);
  return [{ type: 'ChannelDefaultPermissionsSet', data: { channelId: channel._id, permissions: toOverrideField(cmd.permissions) } }];
}
