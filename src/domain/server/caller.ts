/** What a decision knows about its caller; the route resolves it from read models (`src/access.ts`). */

/** The caller of a server or channel command. */
export interface CallerFacts {
  /** The caller's user id. */
  userId: string;
  /** The permission value the command is judged by: server-level for server commands, channel-level for channel commands. */
  permissions: bigint;
  /** Ranking for rank checks: −Infinity for the owner, the best rank of the caller's roles, +Infinity without roles. */
  ranking: number;
  /** The caller owns the server. */
  isOwner: boolean;
}

/** Context of most server decisions. */
export interface CallerContext {
  caller: CallerFacts;
}
