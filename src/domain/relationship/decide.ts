/**
 * Friend requests and blocks (Stoat's `User::add_friend`, `remove_friend`, `block_user`, `unblock_user`):
 * pure decisions over both users' relationship states. Each returns the two `RelationshipChanged` events
 * (one per stream) or throws Stoat's error.
 */
import { AppError } from '../../errors.ts';
import type { DomainEvent } from '../events.ts';
import type { RelationshipStatus } from './events.ts';
import { statusOf, type RelationsState } from './state.ts';

/** Both sides of a relationship decision. */
export interface RelationPair {
  /** The caller's state. */
  me: RelationsState;
  /** The target's state. */
  them: RelationsState;
}

/** The events of a decision: the caller's stream first, then the target's. */
export interface RelationChange {
  mine: DomainEvent[];
  theirs: DomainEvent[];
}

/** Context of a friend request. */
export interface FriendContext {
  /** Most outgoing requests a user may have pending (Stoat's `outgoing_friend_requests`, 10). */
  maxOutgoing: number;
}

function change(p: RelationPair, mine: RelationshipStatus, theirs: RelationshipStatus): RelationChange {
  return {
    mine: [{ type: 'RelationshipChanged', data: { userId: p.me.userId, other: p.them.userId, status: mine } }],
    theirs: [{ type: 'RelationshipChanged', data: { userId: p.them.userId, other: p.me.userId, status: theirs } }],
  };
}

/** Sends a friend request, or accepts the incoming one. */
export function decideAddFriend(p: RelationPair, ctx: FriendContext): RelationChange {
  switch (statusOf(p.me, p.them.userId)) {
    case 'User':
      throw new AppError({ type: 'NoEffect' });
    case 'Friend':
      throw new AppError({ type: 'AlreadyFriends' });
    case 'Outgoing':
      throw new AppError({ type: 'AlreadySentRequest' });
    case 'Blocked':
      throw new AppError({ type: 'Blocked' });
    case 'BlockedOther':
      throw new AppError({ type: 'BlockedByOther' });
    case 'Incoming':
      return change(p, 'Friend', 'Friend');
    case 'None': {
      const outgoing = Object.values(p.me.relations).filter((s) => s === 'Outgoing').length;
      if (outgoing >= ctx.maxOutgoing) throw new AppError({ type: 'TooManyPendingFriendRequests', max: ctx.maxOutgoing });
      return change(p, 'Outgoing', 'Incoming');
    }
  }
}

/** Removes a friend, denies an incoming request or cancels an outgoing one. */
export function decideRemoveFriend(p: RelationPair): RelationChange {
  const s = statusOf(p.me, p.them.userId);
  if (s === 'Friend' || s === 'Outgoing' || s === 'Incoming') return change(p, 'None', 'None');
  throw new AppError({ type: 'NoEffect' });
}

/** Blocks the target (both blocked when the target had blocked the caller). */
export function decideBlock(p: RelationPair): RelationChange {
  switch (statusOf(p.me, p.them.userId)) {
    case 'User':
    case 'Blocked':
      throw new AppError({ type: 'NoEffect' });
    case 'BlockedOther':
      return change(p, 'Blocked', 'Blocked');
    default:
      return change(p, 'Blocked', 'BlockedOther');
  }
}

/** Lifts the caller's block (the target's own block, if any, stays). */
export function decideUnblock(p: RelationPair): RelationChange {
  if (statusOf(p.me, p.them.userId) !== 'Blocked') throw new AppError({ type: 'NoEffect' });
  switch (statusOf(p.them, p.me.userId)) {
    case 'Blocked':
      return change(p, 'BlockedOther', 'Blocked');
    case 'BlockedOther':
      return change(p, 'None', 'None');
    default:
      throw new AppError({ type: 'InternalError' });
  }
}
