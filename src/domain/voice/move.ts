/**
 * Moving a member between voice calls (Stoat's `DataMemberEdit.voice_channel`): the checks, pure. The move
 * itself is LiveKit's (RoomService.MoveParticipant); presence then follows from its webhooks.
 */
import { AppError } from '../../errors.ts';
import { Permission } from '../../permissions/bits.ts';
import { has, require as requirePermission, requireElevatedOver } from '../../permissions/calculate.ts';
import type { ServerVoiceState } from './state.ts';

/** What deciding a move needs. */
export interface MoveFacts {
  /** The member moved. */
  userId: string;
  /** True when the caller moves themselves. */
  self: boolean;
  /** The caller's ranking and the target's (member ranking), for the rank check on others. */
  callerRanking: number;
  targetRanking: number;
  /** The destination: null when it is not a channel of this server. */
  destination: { id: string; voice: boolean } | null;
  /** The caller's channel permissions in the destination. */
  callerPermissions: bigint;
  /** The target's channel permissions in the destination. */
  targetPermissions: bigint;
  /** The server's voice presence. */
  voice: ServerVoiceState | null;
}

/**
 * Checks, in order: the destination is a channel of the server (404 UnknownChannel) and a voice channel (400
 * NotAVoiceChannel); the caller holds MoveMembers there (403 MissingPermission); another member must rank below
 * the caller (403 NotElevated); the member must be in a call of this server (400 NotConnected) and be allowed
 * to Connect to the destination (403 MissingPermission Connect: LiveKit would be told to drop them at once).
 * Returns the room to move from, or null when they are already in the destination (nothing to do).
 */
export function decideMove(f: MoveFacts): { from: string; to: string } | null {
  if (!f.destination) throw new AppError({ type: 'UnknownChannel' });
  if (!f.destination.voice) throw new AppError({ type: 'NotAVoiceChannel' });
  requirePermission(f.callerPermissions, Permission.MoveMembers);
  if (!f.self) requireElevatedOver(f.callerRanking, f.targetRanking);
  const current = f.voice && Object.hasOwn(f.voice.participants, f.userId) ? f.voice.participants[f.userId]! : null;
  if (!current) throw new AppError({ type: 'NotConnected' });
  if (!has(f.targetPermissions, Permission.Connect)) throw new AppError({ type: 'MissingPermission', permission: 'Connect' });
  if (current.channel === f.destination.id) return null;
  return { from: current.channel, to: f.destination.id };
}
