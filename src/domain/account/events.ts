/**
 * Events of the account aggregate (stream `account-<userId>`, scope = the user id), and of the two
 * uniqueness streams: `email-<sha256(email)>` and `username-<lowercased username>`.
 * Secrets enter the log only hashed (DESIGN §3).
 */
import { z } from 'zod';
import { FileObject, Presence } from '../shared.ts';

export const accountEvents = {
  /** An account was registered. `passwordHash` is an scrypt hash string, never the password. */
  AccountCreated: z.object({ userId: z.string(), email: z.string(), passwordHash: z.string() }),
  /** The email of an account was claimed (uniqueness stream `email-…`). */
  EmailClaimed: z.object({ userId: z.string() }),
  /** A login failed; `lockedUntil` is set when the attempt count triggers a lockout. */
  LoginFailed: z.object({ attempts: z.number().int(), lockedUntil: z.string().nullable() }),
  /** A session was opened. The token itself is never stored, only its SHA-256. */
  SessionCreated: z.object({ sessionId: z.string(), tokenHash: z.string(), name: z.string() }),
  /** A session was renamed. */
  SessionRenamed: z.object({ sessionId: z.string(), name: z.string() }),
  /** A session was closed (logout or revocation). */
  SessionRevoked: z.object({ sessionId: z.string() }),
  /** The password was changed. */
  PasswordChanged: z.object({ passwordHash: z.string() }),
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
  }),
};
