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
 * Events whose append destroys a subject's key (after the append succeeded; the projector repeats it), given the
 * event's stream and data. A standing legal hold on the subject (the `holds` stream, src/domain/hold/) keeps the
 * key: the account is deleted, its personal data is not erased. Lifting the last hold on a deleted account
 * (`HoldLifted` of a user hold) destroys the key then. `PersonalDataStore` decides from the log, never from
 * a read model, so a replay or a rebuild decides as the standing holds say now.
 */
export const ERASING_EVENTS: ReadonlyMap<string, (stream: string, data: Record<string, unknown>) => string | null> = new Map(
  Object.entries({
    AccountDeleted: accountSubject,
    HoldLifted: (_stream: string, data: Record<string, unknown>) => {
      const target = data.target as { type?: unknown; id?: unknown } | undefined;
      return target?.type === 'user' && typeof target.id === 'string' ? target.id : null;
    },
  } satisfies Partial<Record<EventType, (stream: string, data: Record<string, unknown>) => string | null>>),
);

/** Erasing events that release a key only when the subject's account is deleted (a lift, not a deletion). */
export const RELEASING_EVENTS: ReadonlySet<string> = new Set(['HoldLifted']);
