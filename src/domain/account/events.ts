/**
 * Events of the account aggregate (stream `account-<userId>`, scope = the user id), and of the two
 * uniqueness streams: `email-<sha256(email)>` and `username-<lowercased username>`.
 * Secrets enter the log only hashed (DESIGN §3).
 */
import { z } from 'zod';
import { FileObject, Presence } from '../shared.ts';

export const accountEvents = {
  /** An account was registered. `passwordHash` is an scrypt hash string, never the password. */
  AccountCreated: z.object({
    userId: z.string(),
    email: z.string(),
    passwordHash: z.string(),
    /** Keyed digest of the email (the `email-<digest>` stream); absent on accounts made before it was keyed (sha256). */
    emailKey: z.string().optional(),
  }),
  /** The email of an account was claimed (uniqueness stream `email-…`). */
  EmailClaimed: z.object({ userId: z.string() }),
  /** The email was given up (account deleted or email changed): it may be claimed again (stream `email-…`). */
  EmailReleased: z.object({ userId: z.string() }),
  /** A verification mail was sent: the account is unverified until the token is used. Only the token's SHA-256 is kept. */
  EmailVerificationStarted: z.object({ tokenHash: z.string(), expiresAt: z.string() }),
  /** The email was verified (the pending token was used). */
  EmailVerified: z.object({}),
  /** A move to a new email was requested; it happens when the token mailed to the new address is used. */
  EmailChangeRequested: z.object({ email: z.string(), emailKey: z.string(), tokenHash: z.string(), expiresAt: z.string() }),
  /** The email changed (`emailKey` = its keyed digest). */
  EmailChanged: z.object({ email: z.string(), emailKey: z.string() }),
  /** A password reset mail was sent. */
  PasswordResetRequested: z.object({ tokenHash: z.string(), expiresAt: z.string() }),
  /** The account was disabled: it cannot log in; its sessions were revoked with it. */
  AccountDisabled: z.object({}),
  /** Deletion was requested; it happens when the mailed token is used. */
  AccountDeletionRequested: z.object({ tokenHash: z.string(), expiresAt: z.string() }),
  /** The account was deleted: its key is destroyed, so its personal fields in the log are unreadable from now on. */
  AccountDeleted: z.object({}),
  /** An MFA ticket was handed out (only its token's SHA-256 is kept). `validated`: usable for account actions; `authorised`: usable to log in. */
  MfaTicketCreated: z.object({ ticketId: z.string(), tokenHash: z.string(), validated: z.boolean(), authorised: z.boolean(), expiresAt: z.string() }),
  /** An MFA ticket was used up. */
  MfaTicketConsumed: z.object({ ticketId: z.string() }),
  /** A TOTP secret was generated, not yet enabled. `secret` is encrypted under the configured key (SECRETS_KEY). */
  TotpSecretGenerated: z.object({ secret: z.string() }),
  /** The pending TOTP secret was confirmed with a code: two-factor login is on. */
  TotpEnabled: z.object({}),
  /** Two-factor login by TOTP was turned off. */
  TotpDisabled: z.object({}),
  /** A TOTP code was accepted: its RFC 6238 time-step; no code of that step or an earlier one is accepted again. */
  TotpCodeUsed: z.object({ step: z.number().int().min(0) }),
  /** New recovery codes; `codes` is the JSON list encrypted under the configured key. */
  RecoveryCodesGenerated: z.object({ codes: z.string() }),
  /** A recovery code was used (its index in the current list). */
  RecoveryCodeUsed: z.object({ index: z.number().int().min(0) }),
  /** An account invite was created (stream `accountinvite-<sha256(code)>`); `code` is encrypted under the configured key. */
  AccountInviteCreated: z.object({ code: z.string() }),
  /** An account invite was used by a sign-up. */
  AccountInviteUsed: z.object({ userId: z.string() }),
  /** A login failed; `lockedUntil` is set when the attempt count triggers a lockout. */
  LoginFailed: z.object({ attempts: z.number().int(), lockedUntil: z.string().nullable() }),
  /** A session was opened. The token itself is never stored, only its SHA-256. */
  SessionCreated: z.object({ sessionId: z.string(), tokenHash: z.string(), name: z.string() }),
  /** A session was renamed. */
  SessionRenamed: z.object({ sessionId: z.string(), name: z.string() }),
  /** A session was closed (logout or revocation). */
  SessionRevoked: z.object({ sessionId: z.string() }),
  /** A session subscribed to Web Push (Stoat keeps one subscription per session; a new one replaces it). */
  PushSubscribed: z.object({
    sessionId: z.string(),
    /** The push service URL the browser handed out. */
    endpoint: z.string(),
    /** The browser's P-256 public key (base64url, 65 bytes uncompressed). */
    p256dh: z.string(),
    /** The browser's 16-byte authentication secret (base64url). */
    auth: z.string(),
  }),
  /** A session's Web Push subscription ended: `user` (unsubscribed) or `gone` (the push service answered 404 or 410 for `endpoint`). */
  PushUnsubscribed: z.object({ sessionId: z.string(), reason: z.enum(['user', 'gone']), endpoint: z.string().optional() }),
  /** The user acknowledged the policy changes created up to `upTo` (ISO 8601; the epoch when there were none). */
  PolicyChangesAcknowledged: z.object({ upTo: z.string() }),
  /** The password was changed. */
  PasswordChanged: z.object({
    passwordHash: z.string(),
    /** Set by a reset through a mailed token: it also lifts a lockout (the mailbox's holder proved it). */
    viaReset: z.boolean().optional(),
  }),
  /** The account chose its username: the user exists from now on. */
  UserOnboarded: z.object({ username: z.string(), discriminator: z.string() }),
  /** A discriminator of a username was claimed (uniqueness stream `username-…`). */
  UsernameClaimed: z.object({ userId: z.string(), username: z.string(), discriminator: z.string() }),
  /** The user changed their username (`PATCH /users/@me/username`); `discriminator` is the one claimed with it. */
  UsernameChanged: z.object({ username: z.string(), discriminator: z.string() }),
  /** A user gave up a username's discriminator (uniqueness stream `username-…` of the old name). */
  UsernameReleased: z.object({ userId: z.string(), discriminator: z.string() }),
  /** The user's profile changed. Only the given fields changed; `remove` clears fields. */
  UserEdited: z.object({
    display_name: z.string().optional(),
    avatar: FileObject.optional(),
    status: z.object({ text: z.string().optional(), presence: Presence.optional() }).optional(),
    profile: z.object({ content: z.string().optional(), background: FileObject.optional() }).optional(),
    remove: z.array(z.enum(['Avatar', 'StatusText', 'StatusPresence', 'ProfileContent', 'ProfileBackground', 'DisplayName'])).default([]),
    /** Set by an instance admin (the event's actor): the user's badges. */
    badges: z.number().int().nonnegative().optional(),
    /** Set by an instance admin: the user's flags. */
    flags: z.number().int().nonnegative().optional(),
  }),
};
