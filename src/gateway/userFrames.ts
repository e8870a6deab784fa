/**
 * Frames for one user's sockets that are not history (Stoat's `.private(user_id)` events such as
 * `UserSlowmodes`): published on a Redis pub/sub channel, so every API process's gateway hands them to the
 * sockets of that user it holds.
 */
import type { RedisClient } from '../redis.ts';
import { controlKeys } from '../readmodel/keys.ts';

/** A frame for one user's sockets, as published. */
export interface UserFrame {
  user: string;
  frame: Record<string, unknown> & { type: string };
}

/** The pub/sub channel of user frames under `prefix`. */
export function userFramesChannel(prefix: string): string {
  return `${controlKeys(prefix).controlChannel}:user`;
}

/** Sends `frame` to every socket of `userId` on every API process (best effort: a lost frame is not history). */
export async function sendToUser(redis: RedisClient, prefix: string, userId: string, frame: UserFrame['frame']): Promise<void> {
  const m: UserFrame = { user: userId, frame };
  await redis.publish(userFramesChannel(prefix), JSON.stringify(m)).catch(() => {});
}
