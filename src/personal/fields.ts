/**
 * Which fields of which events are personal data (DESIGN §6). Each listed field is sealed (AES-256-GCM under
 * the subject's key from the key store) when the event is appended and opened when it is read, so the log
 * never holds it in plain text and destroying the subject's key erases it from every past event.
 *
 * **To declare a new personal field, add its name to the event's `fields` below** (a new event type gets
 * its own entry). Only top-level fields of `data` are listed; an object field (`profile`, `avatar`) is sealed
 * whole. Events appended before a field was listed stay readable (plain values are read as they are).
 */
import type { EventType } from '../domain/events.ts';
import { isUlid, ulidTime } from '../ids.ts';

/** The personal fields of one event type and whose they are. */
export interface PersonalFieldSpec {
  /** The data subject (the key's owner) of an event on `stream`. */
  subject(stream: string): string | null;
  /** Top-level fields of `data` that are personal. */
  fields: readonly string[];
}

/** `account-<id>` → `<id>`. */
function accountSubject(stream: string): string | null {
  return stream.startsWith('account-') ? stream.slice('account-'.length) : null;
}

/** Every event type with personal fields. */
export const PERSONAL_FIELDS: ReadonlyMap<string, PersonalFieldSpec> = new Map(
  Object.entries({
    AccountCreated: { subject: accountSubject, fields: ['email', 'passwordHash'] },
    PasswordChanged: { subject: accountSubject, fields: ['passwordHash'] },
    EmailChangeRequested: { subject: accountSubject, fields: ['email'] },
    EmailChanged: { subject: accountSubject, fields: ['email'] },
    UserEdited: { subject: accountSubject, fields: ['display_name', 'avatar', 'profile', 'status'] },
    PushSubscribed: { subject: accountSubject, fields: ['endpoint', 'p256dh', 'auth'] },
    PushUnsubscribed: { subject: accountSubject, fields: ['endpoint'] },
  } satisfies Partial<Record<EventType, PersonalFieldSpec>>),
);

/**
 * Message content under retention (issue 39 part 1): the same sealing, with a subject per channel and time
 * bucket instead of per account, so destroying a bucket's key erases the content of every message of that
 * channel sent in that span — sends, edits, link previews — from every past event. An uploaded file's name is
 * sealed under a key of its own (`file:<id>`), destroyed when the file is retired (`FileExpired`: its bytes go).
 *
 * **To declare a new content field, add its path to the event's `paths` below.** A path names nested fields
 * of `data`; `*` stands for every element of an array (`message.attachments.*.filename`). Each value is sealed
 * whole, with `s` (its subject) in the sealed object, since the bucket width may change between deployments.
 */
export interface ContentFieldSpec {
  /** The subject whose key seals the fields of an event on `stream` (null: nothing to seal). */
  subject(stream: string, data: Record<string, unknown>, bucketMs: number): string | null;
  /** Paths of the sealed fields inside `data`. */
  paths: ReadonlyArray<readonly string[]>;
}

/** Prefix of every content subject. */
export const CONTENT_SUBJECT = 'content:';

/** `content:<channel>:<bucket start ms, 15 digits>:<bucket width ms>`: the key of one channel's time bucket. */
export function contentSubject(channel: string, messageTimeMs: number, bucketMs: number): string {
  const start = Math.floor(messageTimeMs / bucketMs) * bucketMs;
  return `${CONTENT_SUBJECT}${channel}:${String(start).padStart(15, '0')}:${bucketMs}`;
}

/** The parts of a content subject (null for any other subject). */
export function parseContentSubject(subject: string): { channel: string; start: number; end: number } | null {
  const m = /^content:([^:]+):(\d{15}):(\d+)$/.exec(subject);
  if (!m) return null;
  const start = Number(m[2]);
  return { channel: m[1]!, start, end: start + Number(m[3]) };
}

/** The bucket of an event on a `message-<id>` stream: its channel (`channel`, or `message.channel` of a send) and the id's time. */
function messageSubject(stream: string, data: Record<string, unknown>, bucketMs: number): string | null {
  if (!stream.startsWith('message-')) return null;
  const id = stream.slice('message-'.length);
  if (!isUlid(id)) return null;
  const sent = data.message as { channel?: unknown } | undefined;
  const channel = typeof data.channel === 'string' ? data.channel : typeof sent?.channel === 'string' ? sent.channel : null;
  return channel ? contentSubject(channel, ulidTime(id), bucketMs) : null;
}

/** `file-<id>` → `file:<id>`: the key of one upload's name. */
function fileSubject(stream: string): string | null {
  return stream.startsWith('file-') ? `file:${stream.slice('file-'.length)}` : null;
}

/** Every event type with sealed content. */
export const CONTENT_FIELDS: ReadonlyMap<string, ContentFieldSpec> = new Map(
  Object.entries({
    MessageSent: { subject: messageSubject, paths: [['message', 'content'], ['message', 'embeds'], ['message', 'attachments', '*', 'filename']] },
    MessageEdited: { subject: messageSubject, paths: [['data', 'content'], ['data', 'embeds']] },
    MessageAppended: { subject: messageSubject, paths: [['embeds']] },
    FileUploaded: { subject: fileSubject, paths: [['file', 'filename']] },
  } satisfies Partial<Record<EventType, ContentFieldSpec>>),
);

/**
 * Events whose append destroys a subject's key (after the append succeeded; the projector repeats it), given the
 * event's stream and data. A standing legal hold on the subject (the `holds` stream, src/domain/hold/) keeps the
 * key: the account is deleted, its personal data is not erased. Lifting the last hold on a deleted account
 * (`HoldLifted` of a user hold) destroys the key then. `PersonalDataStore` decides from the log, never from
 * a read model, so a replay or a rebuild decides as the standing holds say now.
 */
export const ERASING_EVENTS: ReadonlyMap<string, (stream: string, data: Record<string, unknown>) => string | null> = new Map(
  Object.entries({
    AccountDeleted: accountSubject,
    /** An upload retired (unattached, or let go of by what used it): its bytes are removed and its name erased. */
    FileExpired: fileSubject,
    /** The retention sweep found every message of a channel's time bucket expired (and none held). */
    RetentionBucketShredded: (_stream: string, data: Record<string, unknown>) => (typeof data.subject === 'string' && data.subject.startsWith(CONTENT_SUBJECT) ? data.subject : null),
    HoldLifted: (_stream: string, data: Record<string, unknown>) => {
      const target = data.target as { type?: unknown; id?: unknown } | undefined;
      return target?.type === 'user' && typeof target.id === 'string' ? target.id : null;
    },
  } satisfies Partial<Record<EventType, (stream: string, data: Record<string, unknown>) => string | null>>),
);

/** Erasing events that release a key only when the subject's account is deleted (a lift, not a deletion). */
export const RELEASING_EVENTS: ReadonlySet<string> = new Set(['HoldLifted']);
