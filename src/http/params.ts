/**
 * Path parameters are validated before anything looks them up (DESIGN §4 "security"): a malformed value is
 * 404 NotFound, as if the path did not exist, so `GET /servers/<id>:members` never reaches another Redis key
 * and a non-member learns nothing. The check is central (by parameter name, in `mountRoutes`), so every
 * route inherits it: a parameter named `id` or `*_id` (and Stoat's `target`, `member`, `msg` …) must be a
 * ULID unless the route declares another form in `params`; any other parameter is bounded in length.
 */
import { isUlid } from '../ids.ts';

/** The forms a path parameter can take. */
export type ParamForm =
  /** A ULID (26 characters, Crockford base32, upper case): users, servers, channels, messages, roles, sessions … */
  | 'ulid'
  /** A user id: a ULID, or `@me` (the caller; routes resolve it themselves). */
  | 'user'
  /** A file id: a 42-character nanoid (`[A-Za-z0-9_-]`), or a ULID of a file uploaded before file ids were nanoids. */
  | 'file'
  /** A custom emoji id: its file's id (either form above). */
  | 'emoji'
  /** A reaction: a custom emoji id, or a Unicode emoji (≤ 64 code points, no `:`, `/` or control characters). */
  | 'reaction'
  /** An invite code (`[A-Za-z0-9]`, 1–64 characters; Stoat's are 8). */
  | 'code'
  /** A mailed token (`<user id>.<random, base64url>`): `[A-Za-z0-9._-]`, 1–128 characters. */
  | 'token'
  /** Anything up to `MAX_PARAM_LENGTH` code points without control characters (tags, filenames, tokens). */
  | 'text';

/** Longest value accepted for any parameter (in code points). */
export const MAX_PARAM_LENGTH = 128;

/** Stoat's parameter names that carry object ids without ending in `_id`. */
const ULID_NAMES = new Set(['id', 'target', 'member', 'msg', 'message', 'server', 'bot', 'target_user', 'user', 'channel', 'role', 'session', 'webhook', 'group']);

/** Parameter names with a form of their own by default. */
const NAMED_FORMS: ReadonlyMap<string, ParamForm> = new Map<string, ParamForm>([
  ['user_id', 'user'],
  ['target', 'user'],
  ['member', 'user'],
  ['member_id', 'user'],
  ['target_user', 'user'],
  ['emoji_id', 'emoji'],
  ['file_id', 'file'],
  ['emoji', 'reaction'],
  ['code', 'code'],
  ['invite_code', 'code'],
]);

/** The form a parameter takes when the route declares nothing for it. */
export function defaultForm(name: string): ParamForm {
  const named = NAMED_FORMS.get(name);
  if (named !== undefined) return named;
  return name.endsWith('_id') || ULID_NAMES.has(name) ? 'ulid' : 'text';
}

const NANOID_FILE = /^[A-Za-z0-9_-]{42}$/;
const CODE = /^[A-Za-z0-9]{1,64}$/;
const TOKEN = /^[A-Za-z0-9._-]{1,128}$/;
// C0/C1 controls, path and key separators, whitespace.
const UNSAFE_TEXT = /[\u0000-\u001f\u007f-\u009f]/;
const UNSAFE_REACTION = /[\u0000-\u0020\u007f-\u009f:/\\]/;

/** True for a ULID or a file id of the current (nanoid) form. */
export function isFileId(value: string): boolean {
  return NANOID_FILE.test(value) || isStrictUlid(value);
}

/** A ULID as this service issues it (upper case). */
export function isStrictUlid(value: string): boolean {
  return value.length === 26 && /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/.test(value) && isUlid(value);
}

/** Whether `value` has the given form. */
export function paramMatches(form: ParamForm, value: string): boolean {
  switch (form) {
    case 'ulid':
      return isStrictUlid(value);
    case 'user':
      return value === '@me' || isStrictUlid(value);
    case 'file':
    case 'emoji':
      return isFileId(value);
    case 'code':
      return CODE.test(value);
    case 'reaction':
      if (isFileId(value)) return true;
      return value.length > 0 && [...value].length <= 64 && !UNSAFE_REACTION.test(value);
    case 'token':
      return TOKEN.test(value);
    case 'text':
      return value.length > 0 && [...value].length <= MAX_PARAM_LENGTH && !UNSAFE_TEXT.test(value);
  }
}

/**
 * True when every parameter has its form (`declared` overrides the default by name). Values arrive
 * percent-decoded from the router.
 */
export function paramsValid(params: Record<string, string>, declared?: Readonly<Record<string, ParamForm>>): boolean {
  for (const name of Object.keys(params)) {
    const value = params[name];
    if (typeof value !== 'string') return false;
    const form = declared && Object.hasOwn(declared, name) ? declared[name]! : defaultForm(name);
    if (!paramMatches(form, value)) return false;
  }
  return true;
}
