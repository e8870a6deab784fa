/**
 * Permission bits (spec "Permissions", reference §4.1/§4.2) as 64-bit `bigint` values, the fixed masks built
 * from them, and the parsing of a permission value written by a client (DESIGN §4 "permissions").
 */
import { AppError } from '../errors.ts';

/** Every defined permission, keyed by its British name, valued by its single bit. */
export const Permission = {
  ManageChannel: 1n << 0n,
  ManageServer: 1n << 1n,
  ManagePermissions: 1n << 2n,
  ManageRole: 1n << 3n,
  ManageCustomisation: 1n << 4n,
  KickMembers: 1n << 6n,
  BanMembers: 1n << 7n,
  TimeoutMembers: 1n << 8n,
  AssignRoles: 1n << 9n,
  ChangeNickname: 1n << 10n,
  ManageNicknames: 1n << 11n,
  ChangeAvatar: 1n << 12n,
  RemoveAvatars: 1n << 13n,
  ViewChannel: 1n << 20n,
  ReadMessageHistory: 1n << 21n,
  SendMessage: 1n << 22n,
  ManageMessages: 1n << 23n,
  ManageWebhooks: 1n << 24n,
  InviteOthers: 1n << 25n,
  SendEmbeds: 1n << 26n,
  UploadFiles: 1n << 27n,
  Masquerade: 1n << 28n,
  React: 1n << 29n,
  Connect: 1n << 30n,
  Speak: 1n << 31n,
  Video: 1n << 32n,
  MuteMembers: 1n << 33n,
  DeafenMembers: 1n << 34n,
  MoveMembers: 1n << 35n,
  Listen: 1n << 36n,
  MentionEveryone: 1n << 37n,
  MentionRoles: 1n << 38n,
  BypassSlowmode: 1n << 39n,
  ViewAuditLogs: 1n << 40n,
} as const satisfies Record<string, bigint>;

/** The British name of a defined permission (the `permission` field of MissingPermission). */
export type PermissionName = keyof typeof Permission;

/** Every permission name, in bit order. */
export const PERMISSION_NAMES = Object.keys(Permission) as PermissionName[];

/** Bits 0–51: what a server owner gets; it spans the free area and is never stored on a role. */
export const GRANT_ALL_SAFE = 0x000f_ffff_ffff_ffffn;

/** What a timed-out member keeps: ViewChannel and ReadMessageHistory. */
export const ALLOW_IN_TIMEOUT = Permission.ViewChannel | Permission.ReadMessageHistory;

/** A new server's default permissions (Stoat's value: view, history, send, invite, embeds, uploads, react,
 * connect, speak, video, listen, change nickname, change avatar). */
export const DEFAULT_PERMISSION_SERVER = 0x11_ee70_1400n;

/** Mask of the defined bits (0–4, 6–13, 20–40); a client-written value may contain no other bit. */
export const DEFINED_BITS: bigint = Object.values(Permission).reduce((mask, bit) => mask | bit, 0n);

/** Exclusive upper bound of a permission value (u64). */
const TWO_POW_64 = 1n << 64n;

const NAME_BY_BIT = new Map<bigint, PermissionName>(PERMISSION_NAMES.map((name) => [Permission[name], name]));

/** The name of one defined bit; anything else (0, several bits, an undefined bit) is a programming error. */
export function permissionName(bit: bigint): PermissionName {
  const name = NAME_BY_BIT.get(bit);
  if (name === undefined) throw new RangeError(`not a single defined permission bit: ${bit}`);
  return name;
}

/** Throws 400 FailedValidation unless `value` is non-negative and made only of defined bits. */
export function assertDefinedBits(value: bigint): void {
  if (value < 0n || value >= TWO_POW_64) {
    throw new AppError({ type: 'FailedValidation', error: 'permission value must be a non-negative integer below 2^64' });
  }
  const undefinedBits = value & ~DEFINED_BITS;
  if (undefinedBits !== 0n) {
    throw new AppError({
      type: 'FailedValidation',
      error: `permission value contains undefined bit ${lowestBitIndex(undefinedBits)}`,
    });
  }
}

// Canonical decimal only (no sign, no leading zeros, no exponent); 20 digits is the length of 2^64 - 1.
const DECIMAL = /^(?:0|[1-9][0-9]{0,19})$/;

/**
 * A client-written permission value: a non-negative safe integer (JSON number) or a canonical decimal string
 * below 2^64, containing only defined bits. Anything else → 400 FailedValidation.
 */
export function parsePermissionValue(input: unknown): bigint {
  let value: bigint;
  if (typeof input === 'number') {
    if (!Number.isSafeInteger(input) || input < 0) {
      throw new AppError({ type: 'FailedValidation', error: 'permission value must be a non-negative integer' });
    }
    value = BigInt(input);
  } else if (typeof input === 'string') {
    if (!DECIMAL.test(input)) {
      throw new AppError({ type: 'FailedValidation', error: 'permission value must be a decimal integer' });
    }
    value = BigInt(input);
  } else {
    throw new AppError({ type: 'FailedValidation', error: 'permission value must be a number' });
  }
  assertDefinedBits(value);
  return value;
}

/** A client-written `{allow, deny}` override, each side parsed by `parsePermissionValue`. */
export function parsePermissionOverride(input: unknown): { allow: bigint; deny: bigint } {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new AppError({ type: 'FailedValidation', error: 'permission override must be an object {allow, deny}' });
  }
  const { allow, deny } = input as { allow?: unknown; deny?: unknown };
  return { allow: parsePermissionValue(allow), deny: parsePermissionValue(deny) };
}

/** A permission value as a JSON number (every value we hold is below 2^53). */
export function toNumber(value: bigint): number {
  if (value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new RangeError(`permission value outside the safe integer range: ${value}`);
  }
  return Number(value);
}

/** Index of the lowest set bit of a positive value. */
function lowestBitIndex(value: bigint): number {
  let index = 0;
  while ((value & 1n) === 0n) {
    value >>= 1n;
    index++;
  }
  return index;
}
