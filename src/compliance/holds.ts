/**
 * Legal holds as the retention sweep sees them (issue 39 part 2).
 *
 * TO BE REPLACED AT MERGE: the holds themselves (events, read model, `/admin/holds`, CLI, audit) are another
 * engineer's part, which provides this module with exactly these three exports. This minimal version reads
 * the active holds from the read-model hash `holds:active` (hold id → `{"type": "server" | "channel" | "user",
 * "id": …}`), which that part's projection is expected to keep; until then nothing writes it but the tests.
 */
import type { ReadModels } from '../readmodel/reader.ts';

/** What the active holds cover. */
export interface HoldTargets {
  servers: ReadonlySet<string>;
  channels: ReadonlySet<string>;
  users: ReadonlySet<string>;
}

/** Read-model key of the active holds (see the module comment). */
export const ACTIVE_HOLDS_KEY = 'holds:active';

/** True when a hold covers a message of `author` in `channel` (of `server`, null for DMs and groups). */
export function holdCovers(t: HoldTargets, m: { server: string | null; channel: string; author: string }): boolean {
  return (m.server !== null && t.servers.has(m.server)) || t.channels.has(m.channel) || t.users.has(m.author);
}

/** The targets of every active hold, from the read model. */
export async function activeHoldTargets(reader: ReadModels): Promise<HoldTargets> {
  const servers = new Set<string>();
  const channels = new Set<string>();
  const users = new Set<string>();
  const all = await reader.hgetallJson<{ type: string; id: string }>(ACTIVE_HOLDS_KEY);
  for (const h of all.values()) {
    if (typeof h?.id !== 'string') continue;
    if (h.type === 'server') servers.add(h.id);
    else if (h.type === 'channel') channels.add(h.id);
    else if (h.type === 'user') users.add(h.id);
  }
  return { servers, channels, users };
}
