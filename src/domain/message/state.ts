/**
 * The message aggregate's state (read model: a member of `channel:<id>:history`): Revolt's Message (reference
 * §8) plus the revision of `message-<id>`, which edits, reactions, pins and deletions expect. The projection
 * and the decider tests apply this one `evolve`.
 */
import type { DomainEvent } from '../events.ts';
import type { MessageObject } from './events.ts';
import { own, setOwn } from '../../own.ts';

/** A stored message: Revolt's Message without `user`/`member`, plus the stream revision. */
export type MessageState = MessageObject & {
  /** ISO time of the last edit. */
  edited?: string;
  /** Emoji → user ids, in insertion order; omitted when empty. */
  reactions?: Record<string, string[]>;
  /** Omitted unless pinned. */
  pinned?: true;
  /** Revision of `message-<id>` this state reflects (the expected revision of the next write). */
  revision: number;
};

/** Applies one event of `message-<id>`; null once deleted (or before it was sent). */
export function evolveMessage(state: MessageState | null, e: DomainEvent, revision: number): MessageState | null {
  if (e.type === 'MessageSent') return { ...e.data.message, revision };
  if (!state) return null;
  const s: MessageState = { ...state, revision };
  switch (e.type) {
    case 'MessageEdited':
      if (e.data.data.content !== undefined) s.content = e.data.data.content;
      if (e.data.data.embeds !== undefined) s.embeds = e.data.data.embeds;
      s.edited = e.data.edited;
      return s;
    case 'MessageAppended':
      s.embeds = [...(s.embeds ?? []), ...e.data.embeds];
      return s;
    case 'MessageReacted': {
      const users = own(s.reactions, e.data.emoji) ?? [];
      if (users.includes(e.data.userId)) return s;
      s.reactions = { ...(s.reactions ?? {}), [e.data.emoji]: [...users, e.data.userId] };
      return s;
    }
    case 'MessageUnreacted': {
      const users = own(s.reactions, e.data.emoji);
      if (!users) return s;
      return withReaction(s, e.data.emoji, users.filter((u) => u !== e.data.userId));
    }
    case 'MessageReactionRemoved':
      return withReaction(s, e.data.emoji, []);
    case 'MessageReactionsCleared':
      delete s.reactions;
      return s;
    case 'CallFinished':
      if (s.system?.type === 'call_started') s.system = { ...s.system, finished_at: e.data.finished_at };
      return s;
    case 'MessagePinned':
      s.pinned = true;
      return s;
    case 'MessageUnpinned':
      delete s.pinned;
      return s;
    case 'MessageDeleted':
    case 'MessageErased':
      return null;
    default:
      return s;
  }
}

/** The message with one emoji's users replaced (the key removed when none are left, the map when empty). */
function withReaction(s: MessageState, emoji: string, users: string[]): MessageState {
  const reactions: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(s.reactions ?? {})) {
    if (k !== emoji) setOwn(reactions, k, v);
    else if (users.length > 0) setOwn(reactions, k, users);
  }
  if (Object.keys(reactions).length > 0) s.reactions = reactions;
  else delete s.reactions;
  return s;
}

/** Revolt's Message JSON from the stored state (no revision). */
/**
 * A message as the read model stores it: `_id`, `channel` and `author` first and `revision` last, so that a
 * stored value is its wire form plus a fixed tail and its author sits at a fixed offset: a history page is
 * assembled by Redis and written out without parsing 100 messages and serialising them again
 * (`readHistoryWire` in src/readmodel/messages.ts).
 */
export function storedMessage(s: MessageState): MessageState {
  const { revision, ...message } = s;
  // Object.assign keeps the three keys where they were put first.
  const out = Object.assign({ _id: s._id, channel: s.channel, author: s.author }, message) as MessageState;
  out.revision = revision;
  return out;
}

export function presentMessage(s: MessageState): Omit<MessageState, 'revision'> {
  const { revision: _revision, ...message } = s;
  return message;
}
