/**
 * hCaptcha verification, as Stoat's authifier does it before creating an account, mailing a password reset or
 * resending a verification: with CAPTCHA_SECRET set, the body's `captcha` is posted (form-encoded `secret`,
 * `response`, `sitekey`) to the siteverify endpoint, and anything but `{"success": true}` — no answer, a
 * refusal, an unreachable service — is 400 CaptchaFailed. Without it, `captcha` is ignored.
 */
import { AppError } from '../../../errors.ts';
import type { AppDeps } from '../../deps.ts';

/** How long the verification service may take. */
const VERIFY_TIMEOUT_MS = 10_000;

/** Throws 400 CaptchaFailed unless captcha is off or `response` verifies. */
export async function checkCaptcha(deps: Pick<AppDeps, 'config'>, response: string | null | undefined): Promise<void> {
  const c = deps.config.captcha;
  if (!c) return;
  if (!response) throw new AppError({ type: 'CaptchaFailed' });
  let ok = false;
  try {
    const res = await fetch(c.verifyUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ secret: c.secret, response, sitekey: c.siteKey }).toString(),
      signal: AbortSignal.timeout(VERIFY_TIMEOUT_MS),
    });
    ok = res.ok && ((await res.json()) as { success?: unknown }).success === true;
  } catch {
    ok = false;
  }
  if (!ok) throw new AppError({ type: 'CaptchaFailed' });
}
