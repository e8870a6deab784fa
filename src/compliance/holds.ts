/**
 * Legal holds as the rest of the service consults them (issue 39 part 2): which servers, channels and users
 * a standing hold covers, read from the read model the `holds` projection keeps (projections/holds.ts), and
 * whether one message falls under them. The retention sweep never erases a message `holdCovers` answers true
 * for; a held user's personal-data key is guarded from the log itself (src/personal/store.ts), not from here.
 */
import type { HoldState } from '../domain/hold/state.ts';
import { rm } from '../readmodel/keys.ts';
import type { ReadModels } from '../readmodel/reader.ts';

/** The ids every standing hold covers, by kind of target. */
export interface HoldTargets {
  servers: ReadonlySet<string>;
  channels: ReadonlySet<string>;
  users: ReadonlySet<string>;
}

/** Whether a message (its server, null for a DM or group; its channel; its author) is under a standing hold. */
export function holdCovers(t: HoldTargets, m: { server: string | null; channel: string; author: string }): boolean {
  return (m.server !== null && t.servers.has(m.server)) || t.channels.has(m.channel) || t.users.has(m.author);
}

/** The targets of every standing hold, read from the read models (bypassing the fact cache). */
export async function activeHoldTargets(reader: ReadModels): Promise<HoldTargets> {
  const ids = await reader.zrangeByLex(rm.holdIndex(true), '-', '+', Number.MAX_SAFE_INTEGER);
  const holds = await reader.direct.hmgetJson<HoldState>(rm.holds(), ids);
  const servers = new Set<string>();
  const channels = new Set<string>();
  const users = new Set<string>();
  for (const h of holds) {
    if (!h || h.lifted_at !== null) continue;
    (h.target.type === 'server' ? servers : h.target.type === 'channel' ? channels : users).add(h.target.id);
  }
  return { servers, channels, users };
}
