/** EditChannel: PATCH /channels/:id of a server channel (reference §3.6). */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { require as requirePermission, requireCanGrant } from '../../permissions/calculate.ts';
import { toOverride } from '../server/permissions.ts';
import type { CallerContext } from '../server/caller.ts';
import type { DomainEvent } from '../events.ts';
import type { FileObject } from '../shared.ts';
import type { ChannelState } from './state.ts';

/** The longest slowmode a channel may have: six hours (Stoat's DataEditChannel bound). */
export const SLOWMODE_MAX_SECONDS = 21_600;

/** Removable channel fields. */
export type ChannelField = 'Description' | 'Icon' | 'DefaultPermissions' | 'Voice' | 'Slowmode';

/** Input of EditChannel; absent fields are unchanged. */
export interface EditChannel {
  name?: string | undefined;
  description?: string | undefined;
  /** The new icon: an `icons` upload the route claimed. */
  icon?: FileObject | undefined;
  nsfw?: boolean | undefined;
  voice?: { max_users?: number | undefined } | undefined;
  /** Slowmode delay in seconds (the body schema bounds it: 0 to 21600, Stoat's six hours). */
  slowmode?: number | undefined;
  /** Group channels only: on a server channel → 400 InvalidOperation. */
  owner?: string | undefined;
  remove: ChannelField[];
}

/** Context of EditChannel: the caller's channel-level value. */
export interface EditChannelContext extends CallerContext {
  voiceEnabled: boolean;
}

/** ManageChannel (and, to remove the default-permission override, what setting it needs: ManagePermissions and every bit it un-denies); an empty edit changes nothing; `owner` → InvalidOperation; voice settings need voice enabled (FeatureDisabled). */
export function decideEditChannel(cmd: EditChannel, channel: ChannelState, ctx: EditChannelContext): DomainEvent[] {
  requirePermission(ctx.caller.permissions, Permission.ManageChannel);
  const data: Extract<DomainEvent, { type: 'ChannelEdited' }>['data']['data'] = {};
  if (cmd.name !== undefined) data.name = cmd.name;
  if (cmd.description !== undefined) data.description = cmd.description;
  if (cmd.icon !== undefined) data.icon = cmd.icon;
  if (cmd.nsfw !== undefined) data.nsfw = cmd.nsfw;
  if (cmd.voice !== undefined) data.voice = cmd.voice.max_users !== undefined ? { max_users: cmd.voice.max_users } : {};
  if (cmd.slowmode !== undefined) data.slowmode = cmd.slowmode;
  if (Object.keys(data).length === 0 && cmd.owner === undefined && cmd.remove.length === 0) return [];
  if (cmd.owner !== undefined) throw new AppError({ type: 'InvalidOperation' });
  if (data.voice !== undefined && !ctx.voiceEnabled) throw new AppError({ type: 'FeatureDisabled', feature: 'voice' });
  if (cmd.remove.includes('DefaultPermissions') && channel.default_permissions) {
    // Removing the default override is setting it to nothing: it needs what setting it needs (a deny the
    // caller could not set, e.g. a hidden channel's ViewChannel, cannot be lifted by ManageChannel alone).
    requirePermission(ctx.caller.permissions, Permission.ManagePermissions);
    requireCanGrant(ctx.caller.permissions, toOverride(channel.default_permissions), { allow: 0n, deny: 0n });
  }
  return [{ type: 'ChannelEdited', data: { channelId: channel._id, data, remove: [...new Set(cmd.remove)] } }];
}
