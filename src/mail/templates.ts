/** The mails the account service sends: pure functions of (kind, link) → subject, plain text and HTML. */

/** What a mail is for. */
export type MailKind = 'verify' | 'reset' | 'change' | 'deletion';

/** One mail, ready for the transport. */
export interface Mail {
  to: string;
  subject: string;
  text: string;
  html: string;
}

const COPY: Record<MailKind, { subject: string; intro: string; action: string }> = {
  verify: { subject: 'Verify your email', intro: 'Welcome! Confirm that this is your email address to finish creating your account.', action: 'Verify email' },
  change: { subject: 'Confirm your new email', intro: 'Someone asked to move an account to this email address. If it was you, confirm it.', action: 'Confirm email' },
  reset: { subject: 'Reset your password', intro: 'Someone asked to reset the password of the account registered with this email.', action: 'Reset password' },
  deletion: {
    subject: 'Confirm account deletion',
    intro: 'Someone asked to delete the account registered with this email. This cannot be undone: your profile and personal data will be erased.',
    action: 'Delete my account',
  },
};

/** The path of each link in the web app (Stoat's for-web routes), under APP_URL. */
export const LINK_PATHS: Record<MailKind, string> = {
  verify: '/login/verify/',
  change: '/login/verify/',
  reset: '/login/reset/',
  deletion: '/delete/',
};

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The link of a token in the web app. */
export function linkFor(appUrl: string, kind: MailKind, token: string): string {
  return `${appUrl.replace(/\/+$/, '')}${LINK_PATHS[kind]}${encodeURIComponent(token)}`;
}

/** Builds a mail. */
export function buildMail(kind: MailKind, to: string, link: string): Mail {
  const c = COPY[kind];
  const footer = 'If you did not ask for this, ignore this mail.';
  return {
    to,
    subject: c.subject,
    text: `${c.intro}\n\n${c.action}: ${link}\n\n${footer}\n`,
    html:
      `<!doctype html><html><body><p>${escapeHtml(c.intro)}</p>` +
      `<p><a href="${escapeHtml(link)}">${escapeHtml(c.action)}</a></p>` +
      `<p style="color:#666">${escapeHtml(footer)}</p></body></html>`,
  };
}
