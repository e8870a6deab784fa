/** Checking an MFA response (Stoat's `consume_mfa_response`) against an account: pure but for scrypt. */
import { z } from 'zod';
import { AppError } from '../../errors.ts';
import type { DomainEvent } from '../events.ts';
import { allowedMethods, checkTotp, matchRecoveryCode } from './mfa.ts';
import { verifyPassword } from './secrets.ts';
import type { AccountState } from './state.ts';

/** Stoat's `MFAResponse`: one of a password, a recovery code or a TOTP code. */
export const MfaResponse = z.union([
  z.strictObject({ password: z.string().max(1024) }),
  z.strictObject({ recovery_code: z.string().max(64) }),
  z.strictObject({ totp_code: z.string().max(16) }),
]);
/** One MFA response. */
export type MfaResponse = z.infer<typeof MfaResponse>;

/**
 * Checks a response: a method the account does not allow → 400 DisallowedMFAMethod; a wrong password → 401
 * InvalidCredentials; a wrong TOTP or recovery code → 401 InvalidToken. A recovery code is used up by the
 * returned event; the caller appends it with its operation.
 */
export async function checkMfaResponse(
  state: AccountState,
  response: MfaResponse,
  ctx: { totpKey: Buffer; now: number },
): Promise<{ method: 'Password' | 'Recovery' | 'Totp'; events: DomainEvent[] }> {
  const allowed = allowedMethods(state);
  if ('password' in response) {
    if (!allowed.includes('Password')) throw new AppError({ type: 'DisallowedMFAMethod' });
    if (!(await verifyPassword(response.password, state.passwordHash))) throw new AppError({ type: 'InvalidCredentials' });
    return { method: 'Password', events: [] };
  }
  if ('totp_code' in response) {
    if (!allowed.includes('Totp') || !state.totp) throw new AppError({ type: 'DisallowedMFAMethod' });
    const step = checkTotp(ctx.totpKey, state.totp.secret, response.totp_code.trim(), ctx.now, state.totp.lastStep);
    if (step === null) throw new AppError({ type: 'InvalidToken' });
    return { method: 'Totp', events: [{ type: 'TotpCodeUsed', data: { step } }] };
  }
  if (!allowed.includes('Recovery')) throw new AppError({ type: 'DisallowedMFAMethod' });
  const index = matchRecoveryCode(ctx.totpKey, state, response.recovery_code);
  if (index === null) throw new AppError({ type: 'InvalidToken' });
  return { method: 'Recovery', events: [{ type: 'RecoveryCodeUsed', data: { index } }] };
}
