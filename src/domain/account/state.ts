/** The account aggregate's state (one `evolve`), kept as the read model `account:<id>`. */
import type { FileObject } from '../shared.ts';
import type { DomainEvent } from '../events.ts';
import { own } from '../../own.ts';

/** Account state: credentials, lockout, sessions and the user profile once onboarded. */
export interface AccountState {
  userId: string;
  email: string;
  passwordHash: string;
  /** Consecutive failed logins. */
  attempts: number;
  /** ISO time until which logins are refused, or null. */
  lockedUntil: string | null;
  /** Open sessions by id (with the session's Web Push subscription, if any). */
  sessions: Record<string, { name: string; tokenHash: string; subscription?: PushSubscription }>;
  /** The user, present once onboarded. */
  user: UserProfile | null;
  /** Keyed digest of the email (its `email-…` stream); absent on accounts made before digests were keyed. */
  emailKey?: string;
  /** Pending email verification or move; absent or null = verified. */
  verification?: EmailVerification | null;
  /** A pending password reset (token hash and expiry). */
  passwordReset?: PendingToken | null;
  /** Disabled accounts cannot log in. */
  disabled?: boolean;
  /** A pending deletion (token hash and expiry). */
  deletion?: PendingToken | null;
  /** The account was deleted (its personal data erased). */
  deleted?: boolean;
  /** Policy changes created up to this time (ISO 8601) were acknowledged; unset = none since the account's creation. */
  policyAckedUpTo?: string;
  /** Open MFA tickets by id (at most `MAX_TICKETS`, oldest dropped). */
  tickets?: Record<string, MfaTicketState>;
  /** TOTP: a generated secret (encrypted under the configured key), pending until confirmed, then enabled. */
  totp?: { status: 'Pending' | 'Enabled'; secret: string; lastStep?: number } | null;
  /** Recovery codes (the list encrypted under the configured key) and the indexes used up. */
  recovery?: { codes: string; used: number[] } | null;
  /** Present when the account is a bot's user: its settings and token (encrypted). */
  bot?: BotState;
  /** Revision of the `account-<id>` stream this state reflects. */
  revision: number;
}

/** A Web Push subscription of a session (Stoat's `WebPushSubscription`). */
export interface PushSubscription {
  endpoint: string;
  p256dh: string;
  auth: string;
}

/** Stoat's Bot (without `_id`, which is the account's user id); `token` encrypted under the configured key. */
export interface BotState {
  owner: string;
  token: string;
  tokenHash: string;
  public: boolean;
  analytics: boolean;
  discoverable: boolean;
  interactions_url?: string;
}

/** A mailed token, kept only as its SHA-256, with its expiry (ISO). */
export interface PendingToken {
  tokenHash: string;
  expiresAt: string;
}

/** A pending verification of the account's email, or of a new email it moves to. */
export type EmailVerification = ({ kind: 'Pending' } & PendingToken) | ({ kind: 'Moving'; email: string; emailKey: string } & PendingToken);

/** An open MFA ticket. */
export interface MfaTicketState {
  tokenHash: string;
  validated: boolean;
  authorised: boolean;
  expiresAt: string;
}

/** Open tickets kept per account; creating one more drops the oldest. */
export const MAX_TICKETS = 8;

/** The stored user profile (Revolt's User without the viewer-dependent fields). */
export interface UserProfile {
  _id: string;
  username: string;
  discriminator: string;
  display_name?: string;
  avatar?: FileObject;
  status?: { text?: string; presence?: 'Online' | 'Idle' | 'Focus' | 'Busy' | 'Invisible' };
  profile?: { content?: string; background?: FileObject };
  badges?: number;
  flags?: number;
  /** Present on a bot's user: who owns it. */
  bot?: { owner: string };
}

/**
 * A stored profile as a User object shows it: without `profile` (bio and background). Stoat's User model has
 * no `profile` field; the profile is read only through `GET /users/:id/profile`, which checks ViewProfile.
 * Every User object the service presents (REST, Ready, events) goes through this.
 */
export function userObject<T extends { profile?: unknown }>(stored: T): Omit<T, 'profile'> {
  const { profile: _profile, ...rest } = stored;
  return rest;
}

/** Stoat's user flag of a deleted account. */
export const USER_FLAG_DELETED = 2;

/** Applies one account-stream event. */
export function evolveAccount(state: AccountState | null, e: DomainEvent, revision: number): AccountState | null {
  if (e.type === 'AccountCreated') {
    return {
      userId: e.data.userId,
      // Both are absent when the account's key was destroyed (a rebuild after deletion).
      email: e.data.email ?? '',
      passwordHash: e.data.passwordHash ?? '',
      attempts: 0,
      lockedUntil: null,
      sessions: {},
      user: null,
      ...(e.data.emailKey !== undefined ? { emailKey: e.data.emailKey } : {}),
      revision,
    };
  }
  if (e.type === 'BotCreated') {
    const userId = e.data.id;
    return {
      userId,
      email: '',
      passwordHash: '',
      attempts: 0,
      lockedUntil: null,
      sessions: {},
      user: { _id: userId, username: e.data.username, discriminator: e.data.discriminator, bot: { owner: e.data.owner } },
      bot: { owner: e.data.owner, token: e.data.token, tokenHash: e.data.tokenHash, public: false, analytics: false, discoverable: false },
      revision,
    };
  }
  if (!state) return state;
  const s: AccountState = { ...state, revision };
  switch (e.type) {
    case 'LoginFailed':
      s.attempts = e.data.attempts;
      s.lockedUntil = e.data.lockedUntil;
      return s;
    case 'SessionCreated':
      s.attempts = 0;
      s.lockedUntil = null;
      s.sessions = { ...s.sessions, [e.data.sessionId]: { name: e.data.name, tokenHash: e.data.tokenHash } };
      return s;
    case 'SessionRenamed': {
      const cur = own(s.sessions, e.data.sessionId);
      if (cur) s.sessions = { ...s.sessions, [e.data.sessionId]: { ...cur, name: e.data.name } };
      return s;
    }
    case 'PolicyChangesAcknowledged':
      s.policyAckedUpTo = e.data.upTo;
      return s;
    case 'PushSubscribed': {
      const cur = own(s.sessions, e.data.sessionId);
      // Absent fields: the account's key was destroyed (a rebuild after deletion); nothing to keep.
      if (cur && e.data.endpoint !== undefined && e.data.p256dh !== undefined && e.data.auth !== undefined) {
        s.sessions = { ...s.sessions, [e.data.sessionId]: { ...cur, subscription: { endpoint: e.data.endpoint, p256dh: e.data.p256dh, auth: e.data.auth } } };
      }
      return s;
    }
    case 'PushUnsubscribed': {
      const cur = own(s.sessions, e.data.sessionId);
      // A `gone` names the endpoint that failed: a newer subscription of the session stays.
      if (cur?.subscription && (e.data.endpoint === undefined || e.data.endpoint === cur.subscription.endpoint)) {
        const { subscription: _gone, ...rest } = cur;
        s.sessions = { ...s.sessions, [e.data.sessionId]: rest };
      }
      return s;
    }
    case 'SessionRevoked': {
      const { [e.data.sessionId]: _gone, ...rest } = s.sessions;
      s.sessions = rest;
      return s;
    }
    case 'PasswordChanged':
      if (e.data.passwordHash !== undefined) s.passwordHash = e.data.passwordHash;
      s.passwordReset = null;
      if (e.data.viaReset) {
        s.attempts = 0;
        s.lockedUntil = null;
      }
      return s;
    case 'EmailVerificationStarted':
      s.verification = { kind: 'Pending', tokenHash: e.data.tokenHash, expiresAt: e.data.expiresAt };
      return s;
    case 'EmailVerified':
      s.verification = null;
      return s;
    case 'EmailChangeRequested':
      s.verification = { kind: 'Moving', email: e.data.email, emailKey: e.data.emailKey, tokenHash: e.data.tokenHash, expiresAt: e.data.expiresAt };
      return s;
    case 'EmailChanged':
      if (e.data.email !== undefined) s.email = e.data.email;
      s.emailKey = e.data.emailKey;
      s.verification = null;
      return s;
    case 'PasswordResetRequested':
      s.passwordReset = { tokenHash: e.data.tokenHash, expiresAt: e.data.expiresAt };
      return s;
    case 'AccountDisabled':
      s.disabled = true;
      return s;
    case 'AccountDeletionRequested':
      s.deletion = { tokenHash: e.data.tokenHash, expiresAt: e.data.expiresAt };
      return s;
    case 'AccountDeleted':
      // Stoat's deleted user: the profile is blanked, the id stays (messages keep their author).
      return {
        userId: s.userId,
        email: '',
        passwordHash: '',
        attempts: 0,
        lockedUntil: null,
        sessions: {},
        user: s.user ? { _id: s.userId, username: 'Deleted User', discriminator: '0000', flags: (s.user.flags ?? 0) | USER_FLAG_DELETED } : null,
        disabled: true,
        deleted: true,
        revision,
      };
    case 'BotEdited': {
      if (!s.bot) return s;
      const b: BotState = { ...s.bot };
      if (e.data.remove.includes('InteractionsURL')) delete b.interactions_url;
      if (e.data.public !== undefined) b.public = e.data.public;
      if (e.data.analytics !== undefined) b.analytics = e.data.analytics;
      if (e.data.interactions_url !== undefined) b.interactions_url = e.data.interactions_url;
      s.bot = b;
      return s;
    }
    case 'BotTokenReset':
      if (s.bot) s.bot = { ...s.bot, token: e.data.token, tokenHash: e.data.tokenHash };
      return s;
    case 'BotDeleted': {
      // Stoat marks the bot's user deleted; the id stays (messages keep their author).
      const { bot: _gone, ...rest } = s;
      return { ...rest, user: s.user ? { _id: s.userId, username: 'Deleted User', discriminator: '0000', flags: (s.user.flags ?? 0) | USER_FLAG_DELETED } : null, disabled: true, deleted: true };
    }
    case 'MfaTicketCreated': {
      const tickets = { ...(s.tickets ?? {}), [e.data.ticketId]: { tokenHash: e.data.tokenHash, validated: e.data.validated, authorised: e.data.authorised, expiresAt: e.data.expiresAt } };
      const ids = Object.keys(tickets).sort();
      while (ids.length > MAX_TICKETS) delete tickets[ids.shift()!];
      s.tickets = tickets;
      return s;
    }
    case 'MfaTicketConsumed': {
      const { [e.data.ticketId]: _used, ...rest } = s.tickets ?? {};
      s.tickets = rest;
      return s;
    }
    case 'TotpSecretGenerated':
      s.totp = { status: 'Pending', secret: e.data.secret };
      return s;
    case 'TotpEnabled':
      if (s.totp) s.totp = { ...s.totp, status: 'Enabled' };
      return s;
    case 'TotpDisabled':
      s.totp = null;
      return s;
    case 'TotpCodeUsed':
      if (s.totp) s.totp = { ...s.totp, lastStep: e.data.step };
      return s;
    case 'RecoveryCodesGenerated':
      s.recovery = { codes: e.data.codes, used: [] };
      return s;
    case 'RecoveryCodeUsed':
      if (s.recovery) s.recovery = { ...s.recovery, used: [...s.recovery.used, e.data.index] };
      return s;
    case 'UserOnboarded':
      s.user = { _id: s.userId, username: e.data.username, discriminator: e.data.discriminator };
      return s;
    case 'UsernameChanged':
      if (s.user) s.user = { ...s.user, username: e.data.username, discriminator: e.data.discriminator };
      return s;
    case 'UserEdited': {
      if (!s.user || s.deleted) return s;
      const u: UserProfile = { ...s.user };
      for (const r of e.data.remove) {
        if (r === 'Avatar') delete u.avatar;
        if (r === 'DisplayName') delete u.display_name;
        if (r === 'StatusText' && u.status) u.status = withoutKey(u.status, 'text');
        if (r === 'StatusPresence' && u.status) u.status = withoutKey(u.status, 'presence');
        if (r === 'ProfileContent' && u.profile) u.profile = withoutKey(u.profile, 'content');
        if (r === 'ProfileBackground' && u.profile) u.profile = withoutKey(u.profile, 'background');
      }
      if (e.data.display_name !== undefined) u.display_name = e.data.display_name;
      if (e.data.avatar !== undefined) u.avatar = e.data.avatar;
      if (e.data.status !== undefined) u.status = { ...u.status, ...e.data.status };
      if (e.data.profile !== undefined) u.profile = { ...u.profile, ...e.data.profile };
      if (e.data.badges !== undefined) u.badges = e.data.badges;
      if (e.data.flags !== undefined) u.flags = e.data.flags;
      if (u.status && Object.keys(u.status).length === 0) delete u.status;
      if (u.profile && Object.keys(u.profile).length === 0) delete u.profile;
      s.user = u;
      return s;
    }
    default:
      return s;
  }
}

function withoutKey<T extends object, K extends keyof T>(o: T, k: K): Omit<T, K> {
  const { [k]: _removed, ...rest } = o;
  return rest;
}
