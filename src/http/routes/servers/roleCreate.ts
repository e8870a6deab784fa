// POST /servers/:server_id/roles — {name, colour?, hoist?} → {id, role}; rank = lowest (ManageRole; at most 200 roles).
import { z } from 'zod';
import { AppError } from '../../../errors.ts';
import { callerFromServer, loadServer } from '../../../access.ts';
import { decideCreateRole } from '../../../domain/server/createRole.ts';
import { newId } from '../../../ids.ts';
import { onServer } from '../../command.ts';
import { defineRoute } from '../../route.ts';
import { colour, name32 } from '../../schemas.ts';
import { own } from '../../../own.ts';

/** Most roles per server (spec "Limits"). */
export const ROLE_LIMIT = 200;

export default defineRoute({
  method: 'POST',
  path: '/servers/:server_id/roles',
  auth: 'user',
  body: z.strictObject({
    name: name32,
    colour: colour.nullish(),
    hoist: z.boolean().nullish(),
    /** Accepted and ignored (Revolt: "no effect"; ranks change only through /roles/ranks). */
    rank: z.number().int().nullish(),
  }),
  permissions: ['ManageRole'],
  async handler(rc) {
    const { body, deps } = rc;
    const serverId = rc.params.server_id!;
    const roleId = newId();
    await onServer(rc, serverId, (a) =>
      decideCreateRole(
        { roleId, name: body.name, colour: body.colour ?? undefined, hoist: body.hoist ?? undefined },
        { server: a.server, members: {}, bans: {} },
        { caller: callerFromServer(a, rc.caller.userId), roleLimit: ROLE_LIMIT },
      ),
    );
    const role = own((await loadServer(deps, serverId))?.roles, roleId);
    if (!role) throw new AppError({ type: 'NotFound' });
    return { id: roleId, role };
  },
});
