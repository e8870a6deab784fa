// PATCH /servers/:server_id/roles/:role_id — {name?, colour?, hoist?, remove?} → Role (ManageRole; rank check; rank is not editable).
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { callerFromServer, loadServer } from '../../../access.ts';
import { decideEditRole } from '../../../domain/server/editRole.ts';
import { onServer } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { colour, name32, removeRole } from '../../schemas.ts';

export default defineRoute({
  method: 'PATCH',
  path: '/servers/:server_id/roles/:role_id',
  auth: 'user',
  body: z.strictObject({
    name: name32.nullish(),
    colour: colour.nullish(),
    hoist: z.boolean().nullish(),
    /** Accepted and ignored (Revolt: "no effect"; use PATCH /servers/:id/roles/ranks). */
    rank: z.number().int().nullish(),
    remove: removeRole.nullish(),
  }),
  permissions: ['ManageRole'],
  async handler(rc) {
    const { body, deps } = rc;
    const serverId = rc.params.server_id!;
    const roleId = rc.params.role_id!;
    await onServer(rc, serverId, (a) =>
      decideEditRole(
        { roleId, name: body.name ?? undefined, colour: body.colour ?? undefined, hoist: body.hoist ?? undefined, remove: body.remove ?? [] },
        { server: a.server, members: {}, bans: {} },
        { caller: callerFromServer(a, rc.caller.userId) },
      ),
    );
    const role = (await loadServer(deps, serverId))?.roles[roleId];
    if (!role) throw new AppError({ type: 'NotFound' });
    return role;
  },
});
