/**
 * The private-channel branches of the shared channel routes (`PATCH`, `DELETE` and
 * `PUT …/permissions/default` on `/channels/:id`): a group PATCH (with ownership transfer and the system
 * messages), leaving a group / closing a DM, and the group's member permissions.
 */
import { loadPrivateChannel } from '../../../access.ts';
import { AppError } from '../../../errors.ts';
import type { PrivateChannelObject } from '../../../domain/private/events.ts';
import { decideEditGroup, decideLeaveGroup, decideSetGroupPermissions } from '../../../domain/private/group.ts';
import { presentPrivateChannel } from '../../../domain/private/state.ts';
import { FileClaims, fileLocks } from '../../../files.ts';
import { Permission, parsePermissionValue } from '../../../permissions/bits.ts';
import { require as requirePermission } from '../../../permissions/calculate.ts';
import { withLastMessage } from '../../../readmodel/lastMessages.ts';
import type { CommandRoute } from '../../command.ts';
import { groupOf, idSource, onPrivateChannel } from './command.ts';

/** The current private channel as served (404 when it vanished, e.g. the last member left). */
export async function currentPrivateChannel(rc: Pick<CommandRoute, 'deps'>, channelId: string): Promise<PrivateChannelObject> {
  const channel = await loadPrivateChannel(rc.deps, channelId);
  if (!channel) throw new AppError({ type: 'NotFound' });
  return withLastMessage(rc.deps.readModels, presentPrivateChannel(channel));
}

/** What a PATCH of a private channel carries. */
export interface PrivateEdit {
  name?: string | null | undefined;
  description?: string | null | undefined;
  icon?: string | null | undefined;
  owner?: string | null | undefined;
  nsfw?: boolean | null | undefined;
  voice?: unknown;
  slowmode?: number | null | undefined;
  remove?: ReadonlyArray<string> | null | undefined;
}

/** PATCH of a group (ManageChannel; DMs and Saved Notes: 400 InvalidOperation unless the body changes nothing). */
export async function editPrivateChannel(rc: CommandRoute, channelId: string, body: PrivateEdit): Promise<PrivateChannelObject> {
  const remove = (body.remove ?? []).filter((f): f is 'Description' | 'Icon' => f === 'Description' || f === 'Icon');
  const nothing = body.name == null && body.description == null && body.icon == null && body.nsfw == null && body.owner == null && body.voice == null && body.slowmode == null && (body.remove ?? []).length === 0;
  await onPrivateChannel(
    rc,
    channelId,
    async (a) => {
      requirePermission(a.permissions, Permission.ViewChannel);
      requirePermission(a.permissions, Permission.ManageChannel);
      if (nothing) return [];
      // Only groups have editable fields; voice settings and the server-only removable fields do not apply.
      const group = groupOf(a);
      if (body.voice != null || body.slowmode != null || remove.length !== (body.remove ?? []).length) throw new AppError({ type: 'InvalidOperation' });
      const files = new FileClaims(rc.deps, rc.caller.userId);
      const icon = await files.use(body.icon, 'icons', { type: 'ChannelIcon', id: channelId });
      const d = decideEditGroup(
        group,
        { name: body.name ?? undefined, description: body.description ?? undefined, icon, nsfw: body.nsfw ?? undefined, owner: body.owner ?? undefined, remove },
        { callerId: rc.caller.userId, permissions: a.permissions, newId: idSource(rc) },
      );
      return { ...d, also: files.writes };
    },
    { lock: fileLocks(body.icon) },
  );
  return currentPrivateChannel(rc, channelId);
}

/** DELETE of a private channel: a DM is closed (`active: false`), a group left; Saved Notes: 400 NoEffect. */
export async function closePrivateChannel(rc: CommandRoute, channelId: string, silent: boolean): Promise<void> {
  await onPrivateChannel(rc, channelId, (a) => {
    requirePermission(a.permissions, Permission.ViewChannel);
    const c = a.channel;
    if (c.channel_type === 'SavedMessages') throw new AppError({ type: 'NoEffect' });
    if (c.channel_type === 'DirectMessage') return c.active ? [{ type: 'DirectMessageActiveSet', data: { channelId, active: false } }] : [];
    return decideLeaveGroup(c, { callerId: rc.caller.userId, silent, newId: idSource(rc) });
  });
}

/** PUT …/permissions/default on a group: `{permissions: <value>}` (ManagePermissions); the override form → 400 InvalidOperation. */
export async function setPrivateDefaultPermissions(rc: CommandRoute, channelId: string, raw: unknown): Promise<PrivateChannelObject> {
  const groupForm = typeof raw === 'number' || typeof raw === 'string';
  const value = groupForm ? parsePermissionValue(raw) : undefined;
  await onPrivateChannel(rc, channelId, (a) => {
    requirePermission(a.permissions, Permission.ManagePermissions);
    const group = groupOf(a);
    if (value === undefined) throw new AppError({ type: 'InvalidOperation' });
    return decideSetGroupPermissions(group, value, { permissions: a.permissions });
  });
  return currentPrivateChannel(rc, channelId);
}
