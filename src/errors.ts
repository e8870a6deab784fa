/**
 * The closed union of error bodies this service answers with (Revolt's `ErrorType`, reference §2), and
 * the one status table. Route code throws `new AppError({type: ...})`; the error middleware renders it.
 */

/** Every error body the API and the media server can produce. */
export type ErrorBody =
  | { type: 'LabelMe' }
  | { type: 'AlreadyOnboarded' }
  | { type: 'UsernameTaken' }
  | { type: 'InvalidUsername' }
  | { type: 'UnknownUser' }
  | { type: 'UnknownChannel' }
  | { type: 'UnknownMessage' }
  | { type: 'UnknownAttachment' }
  | { type: 'CannotEditMessage' }
  | { type: 'CannotDeleteMessage' }
  | { type: 'CannotJoinCall' }
  | { type: 'TooManyAttachments'; max: number }
  | { type: 'TooManyReplies'; max: number }
  | { type: 'TooManyEmbeds'; max: number }
  | { type: 'TooManyChannels'; max: number }
  | { type: 'TooManyServers'; max: number }
  | { type: 'TooManyEmoji'; max: number }
  | { type: 'TooManyRoles'; max: number }
  | { type: 'EmptyMessage' }
  | { type: 'PayloadTooLarge' }
  | { type: 'CannotRemoveYourself' }
  | { type: 'AlreadyPinned' }
  /** The sender is in the channel's slowmode: `retry_after` seconds to wait (Stoat, 429). */
  | { type: 'InSlowmode'; retry_after: number }
  | { type: 'NotPinned' }
  | { type: 'InvalidFlagValue' }
  | { type: 'UnknownServer' }
  | { type: 'InvalidRole' }
  | { type: 'Banned' }
  | { type: 'AlreadyInServer' }
  | { type: 'CannotTimeoutYourself' }
  | { type: 'IsBot' }
  | { type: 'IsNotBot' }
  | { type: 'ReachedMaximumBots' }
  | { type: 'BotIsPrivate' }
  | { type: 'MissingPermission'; permission: string }
  | { type: 'MissingUserPermission'; permission: string }
  | { type: 'NotElevated' }
  | { type: 'NotPrivileged' }
  | { type: 'CannotGiveMissingPermissions' }
  | { type: 'NotOwner' }
  | { type: 'IsElevated' }
  | { type: 'DatabaseError'; operation: string; collection: string }
  | { type: 'InternalError' }
  | { type: 'InvalidOperation' }
  | { type: 'InvalidCredentials' }
  | { type: 'CaptchaFailed' }
  | { type: 'InvalidProperty' }
  | { type: 'InvalidSession' }
  | { type: 'NotAuthenticated' }
  | { type: 'DuplicateNonce' }
  | { type: 'NotFound' }
  | { type: 'NoEffect' }
  | { type: 'FailedValidation'; error: string }
  | { type: 'LiveKitUnavailable' }
  | { type: 'NotAVoiceChannel' }
  | { type: 'AlreadyConnected' }
  | { type: 'NotConnected' }
  | { type: 'UnknownNode' }
  | { type: 'FeatureDisabled'; feature: string }
  | { type: 'FileTooSmall' }
  | { type: 'FileTooLarge'; max: number }
  | { type: 'FileTypeNotAllowed' }
  /** A remote resource could not be fetched (Stoat's January: bad URL, unreachable, an error status). */
  | { type: 'ProxyError' }
  | { type: 'ImageProcessingFailed' }
  | { type: 'ShortPassword' }
  | { type: 'LockedOut' }
  | { type: 'IncorrectData'; with: string }
  | { type: 'UnverifiedAccount' }
  | { type: 'MissingInvite' }
  | { type: 'InvalidInvite' }
  | { type: 'InvalidToken' }
  | { type: 'OperationFailed' }
  | { type: 'TotpAlreadyEnabled' }
  | { type: 'DisallowedMFAMethod' }
  | { type: 'AlreadyFriends' }
  | { type: 'AlreadySentRequest' }
  | { type: 'Blocked' }
  | { type: 'BlockedByOther' }
  | { type: 'NotFriends' }
  | { type: 'TooManyPendingFriendRequests'; max: number }
  | { type: 'GroupTooLarge'; max: number }
  | { type: 'AlreadyInGroup' }
  | { type: 'NotInGroup' }
  | { type: 'CannotReportYourself' };

/** Name of every error type. */
export type ErrorType = ErrorBody['type'];

/** HTTP status of every error type (Stoat's table, reference §2). */
export const ERROR_STATUS = {
  LabelMe: 500,
  AlreadyOnboarded: 403,
  UsernameTaken: 409,
  InvalidUsername: 400,
  UnknownUser: 404,
  UnknownChannel: 404,
  UnknownMessage: 404,
  UnknownAttachment: 400,
  CannotEditMessage: 403,
  CannotDeleteMessage: 403,
  CannotJoinCall: 400,
  TooManyAttachments: 400,
  TooManyReplies: 400,
  TooManyEmbeds: 400,
  TooManyChannels: 400,
  TooManyServers: 400,
  TooManyEmoji: 400,
  TooManyRoles: 400,
  EmptyMessage: 422,
  PayloadTooLarge: 422,
  CannotRemoveYourself: 400,
  AlreadyPinned: 400,
  InSlowmode: 429,
  NotPinned: 400,
  InvalidFlagValue: 400,
  UnknownServer: 404,
  InvalidRole: 404,
  Banned: 403,
  AlreadyInServer: 409,
  CannotTimeoutYourself: 400,
  IsBot: 400,
  IsNotBot: 400,
  ReachedMaximumBots: 400,
  BotIsPrivate: 403,
  MissingPermission: 403,
  MissingUserPermission: 403,
  NotElevated: 403,
  NotPrivileged: 403,
  CannotGiveMissingPermissions: 403,
  NotOwner: 403,
  IsElevated: 403,
  DatabaseError: 500,
  InternalError: 500,
  InvalidOperation: 400,
  InvalidCredentials: 401,
  CaptchaFailed: 400,
  InvalidProperty: 400,
  InvalidSession: 401,
  NotAuthenticated: 401,
  DuplicateNonce: 409,
  NotFound: 404,
  NoEffect: 400,
  FailedValidation: 400,
  LiveKitUnavailable: 400,
  NotAVoiceChannel: 400,
  AlreadyConnected: 400,
  NotConnected: 400,
  UnknownNode: 400,
  FeatureDisabled: 400,
  FileTooSmall: 422,
  FileTooLarge: 422,
  FileTypeNotAllowed: 400,
  ProxyError: 400,
  ImageProcessingFailed: 500,
  ShortPassword: 400,
  LockedOut: 403,
  IncorrectData: 400,
  UnverifiedAccount: 403,
  MissingInvite: 400,
  InvalidInvite: 400,
  InvalidToken: 401,
  OperationFailed: 400,
  TotpAlreadyEnabled: 400,
  DisallowedMFAMethod: 400,
  AlreadyFriends: 409,
  AlreadySentRequest: 409,
  Blocked: 409,
  BlockedByOther: 403,
  NotFriends: 403,
  TooManyPendingFriendRequests: 400,
  GroupTooLarge: 403,
  AlreadyInGroup: 409,
  NotInGroup: 404,
  CannotReportYourself: 400,
} as const satisfies Record<ErrorType, number>;

/** A typed failure. `status` overrides the table only where DESIGN §4 says so (503 for exhausted retries). */
export class AppError extends Error {
  readonly body: ErrorBody;
  readonly status: number;
  constructor(body: ErrorBody, status?: number) {
    super(body.type);
    this.name = 'AppError';
    this.body = body;
    this.status = status ?? ERROR_STATUS[body.type];
  }
}

/** Shorthand for `throw new AppError(...)` in expression position. */
export function fail(body: ErrorBody, status?: number): never {
  throw new AppError(body, status);
}

/** The service cannot answer right now (read models rebuilding, retries exhausted): 503 InternalError. */
export function unavailable(): AppError {
  return new AppError({ type: 'InternalError' }, 503);
}

/** 403 MissingPermission naming the permission in its British spelling. */
export function missingPermission(permission: string): AppError {
  return new AppError({ type: 'MissingPermission', permission });
}
