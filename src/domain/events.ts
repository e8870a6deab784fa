/**
 * The registry of every event type: each aggregate's `events.ts` contributes zod schemas, collected here.
 * Appends validate `data` against its schema; reads pass through the upcasters (events are never
 * rewritten: a changed shape gets an upcaster, DESIGN §3).
 */
import type { z } from 'zod';
import type { EventMetadata, NewEvent, RecordedEvent } from '../eventstore/port.ts';
import { newEventId } from '../ids.ts';
import { accountEvents } from './account/events.ts';
import { channelEvents } from './channel/events.ts';
import { messageEvents } from './message/events.ts';
import { serverEvents } from './server/events.ts';
import { fileEvents } from './file/events.ts';
import { unreadEvents } from './unreads/events.ts';
import { settingsEvents } from './settings/events.ts';
import { relationshipEvents } from './relationship/events.ts';
import { privateChannelEvents } from './private/events.ts';
import { moderationEvents } from './moderation/events.ts';
import { voiceEvents } from './voice/events.ts';
import { botEvents } from './bot/events.ts';
import { webhookEvents } from './webhook/events.ts';
import { holdEvents } from './hold/events.ts';
import { retentionEvents } from './retention/events.ts';

/** Every event schema by type name. Add an aggregate's schemas here. */
export const EVENT_SCHEMAS = {
  ...accountEvents,
  ...serverEvents,
  ...channelEvents,
  ...fileEvents,
  ...messageEvents,
  ...unreadEvents,
  ...settingsEvents,
  ...relationshipEvents,
  ...privateChannelEvents,
  ...moderationEvents,
  ...voiceEvents,
  ...botEvents,
  ...webhookEvents,
  ...holdEvents,
  ...retentionEvents,
} as const satisfies Record<string, z.ZodType>;

/** Name of every event type. */
export type EventType = keyof typeof EVENT_SCHEMAS;
/** The data of one event type. */
export type EventDataOf<T extends EventType> = z.infer<(typeof EVENT_SCHEMAS)[T]>;
/** A domain event: what `decide` returns and what projections switch on. */
export type DomainEvent = { [K in EventType]: { type: K; data: EventDataOf<K> } }[EventType];
/** A recorded event narrowed to the domain union (after upcasting). */
export type StoredEvent = RecordedEvent & DomainEvent;

/** Upgrades an old event shape to the current one; keyed by event type. */
export type Upcaster = (data: Record<string, unknown>, metadata: EventMetadata) => Record<string, unknown>;
const upcasters = new Map<string, Upcaster[]>();

/** Registers an upcaster for an event type (applied in registration order). */
export function registerUpcaster(type: EventType, fn: Upcaster): void {
  const list = upcasters.get(type) ?? [];
  list.push(fn);
  upcasters.set(type, list);
}

/** Applies the upcasters of the event's type. Unknown types pass through unchanged. */
export function upcast(e: RecordedEvent): StoredEvent {
  const fns = upcasters.get(e.type);
  if (!fns) return e as StoredEvent;
  let data = e.data as Record<string, unknown>;
  for (const fn of fns) data = fn(data, e.metadata);
  return { ...e, data } as StoredEvent;
}

/** True when the type is one this build knows. */
export function isKnownEventType(type: string): type is EventType {
  return Object.hasOwn(EVENT_SCHEMAS, type);
}

/** Validates a domain event against its schema and wraps it for the store. A failure is a bug: it throws. */
export function toNewEvent(e: DomainEvent, metadata: EventMetadata): NewEvent {
  const schema = EVENT_SCHEMAS[e.type] as z.ZodType;
  const parsed = schema.safeParse(e.data);
  if (!parsed.success) {
    throw new Error(`event ${e.type} does not match its schema: ${parsed.error.message}`);
  }
  const meta: EventMetadata = { actor: metadata.actor, requestId: metadata.requestId, at: metadata.at, scope: metadata.scope };
  if (metadata.reason !== undefined) meta.reason = metadata.reason;
  return { id: newEventId(), type: e.type, data: parsed.data, metadata: meta };
}
