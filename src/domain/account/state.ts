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
  /** Open sessions by id. */
  sessions: Record<string, { name: string; tokenHash: string }>;
  /** The user, present once onboarded. */
  user: UserProfile | null;
  /** Revision of the `account-<id>` stream this state reflects. */
  revision: number;
}

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
}

/** Applies one account-stream event. */
export function evolveAccount(state: AccountState | null, e: DomainEvent, revision: number): AccountState | null {
  if (e.type === 'AccountCreated') {
    return {
      userId: e.data.userId,
      email: e.data.email,
      passwordHash: e.data.passwordHash,
      attempts: 0,
      lockedUntil: null,
      sessions: {},
      user: null,
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
    case 'SessionRevoked': {
      const { [e.data.sessionId]: _gone, ...rest } = s.sessions;
      s.sessions = rest;
      return s;
    }
    case 'PasswordChanged':
      s.passwordHash = e.data.passwordHash;
      return s;
    case 'UserOnboarded':
      s.user = { _id: s.userId, username: e.data.username, discriminator: e.data.discriminator };
      return s;
    case 'UserEdited': {
      if (!s.user) return s;
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
