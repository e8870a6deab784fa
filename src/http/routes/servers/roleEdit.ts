// PATCH /servers/:server_id/roles/:role_id — {name?, colour?, hoist?, icon?, remove?} → Role (ManageRole; rank check; rank is not editable).
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { callerFromServer, loadServer } from '../../../access.ts';
import { decideEditRole } from '../../../domain/server/editRole.ts';
import { FileClaims, fileLocks } from '../../../files.ts';
import { onServer } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { colour, idString, name32, removeRole } from '../../schemas.ts';
import { own } from '../../../own.ts';

export default defineRoute({
  method: 'PATCH',
  path: '/servers/:server_id/roles/:role_id',
  auth: 'user',
  body: z.strictObject({
    name: name32.nullish(),
    colour: colour.nullish(),
    hoist: z.boolean().nullish(),
    /** An `icons` upload id (used once); the spec gives roles an icon. */
    icon: idString.nullish(),
    /** Accepted and ignored (Revolt: "no effect"; use PATCH /servers/:id/roles/ranks). */
    rank: z.number().int().nullish(),
    remove: removeRole.nullish(),
  }),
  permissions: ['ManageRole'],
  async handler(rc) {
    const { body, deps } = rc;
    const serverId = rc.params.server_id!;
    const roleId = rc.params.role_id!;
    await onServer(
      rc,
      serverId,
      async (a) => {
        const files = new FileClaims(deps, rc.caller.userId);
        const icon = await files.use(body.icon, 'icons', { type: 'RoleIcon', id: roleId });
        const events = decideEditRole(
          { roleId, name: body.name ?? undefined, colour: body.colour ?? undefined, hoist: body.hoist ?? undefined, icon, remove: body.remove ?? [] },
          { server: a.server, members: {}, bans: {} },
          { caller: callerFromServer(a, rc.caller.userId) },
        );
        return { events, also: files.writes };
      },
      { lock: fileLocks(body.icon) },
    );
    const role = own((await loadServer(deps, serverId))?.roles, roleId);
    if (!role) throw new AppError({ type: 'NotFound' });
    return role;
  },
});
