/** Shared by the invite routes: the stored invite by code. */
import { AppError } from '../../../errors.ts';
import type { AccessDeps } from '../../../access.ts';
import type { InviteObject } from '../../../domain/models.ts';
import type { GroupInviteObject } from '../../../domain/private/events.ts';
import { rm } from '../../../readmodel/keys.ts';

/** The invite with this code, or 404 NotFound. */
export async function loadInvite(deps: AccessDeps, code: string): Promise<InviteObject | GroupInviteObject> {
  const invite = code.length <= 64 ? await deps.readModels.getJson<InviteObject | GroupInviteObject>(rm.invite(code)) : null;
  if (!invite) throw new AppError({ type: 'NotFound' });
  return invite;
}
