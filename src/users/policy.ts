/**
 * Policy changes (Stoat's `PolicyChange`): an operator-kept list in the JSON file POLICY_CHANGES, an array of
 * `{created_time, effective_time, description, url}`. A user's Ready carries the changes created after the
 * last one they acknowledged — and, before any acknowledgement, after their account was created (as Stoat,
 * whose new users start at their creation time). `POST /policy/acknowledge` moves their mark to the newest
 * change. The file is read again when it changes (mtime and size), so `npm run accounts -- policy add` needs
 * no restart; a file that stops parsing keeps the last good list (and is reported once).
 */
import fs from 'node:fs';
import { z } from 'zod';

/** One policy change as clients receive it. */
export const PolicyChange = z.strictObject({
  /** When the change was announced (ISO 8601). */
  created_time: z.iso.datetime({ offset: true }),
  /** When it takes effect (ISO 8601). */
  effective_time: z.iso.datetime({ offset: true }),
  description: z.string().min(1).max(2000),
  url: z.url().max(2048),
});
/** One policy change. */
export type PolicyChange = z.infer<typeof PolicyChange>;

/** The file's contents: at most 1,000 changes. */
export const PolicyChangeList = z.array(PolicyChange).max(1000);

/** Parses the file's text; throws a line saying what is wrong. */
export function parsePolicyChanges(text: string): PolicyChange[] {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error('is not valid JSON');
  }
  const r = PolicyChangeList.safeParse(json);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new Error(`${issue.path.join('.') || 'the list'}: ${issue.message}`);
  }
  return r.data;
}

/** Reads the list at `file`: a missing file is an empty list. */
export function readPolicyFile(file: string): PolicyChange[] {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new Error(`cannot be read: ${(err as Error).message}`);
  }
  return parsePolicyChanges(text);
}

/** The changes a user is shown: those created after `since` (their last acknowledgement, else their account's creation). */
export function pendingPolicyChanges(list: readonly PolicyChange[], since: number): PolicyChange[] {
  return list.filter((p) => Date.parse(p.created_time) > since);
}

/** The acknowledgement mark: the newest change's creation time (0 with none). */
export function newestPolicyChange(list: readonly PolicyChange[]): number {
  return list.reduce((max, p) => Math.max(max, Date.parse(p.created_time)), 0);
}

const sources = new Map<string, PolicySource>();

/** The one source of a file (shared by the routes and the gateway of a process). */
export function policySource(file: string | undefined, warn?: (msg: string) => void): PolicySource {
  if (!file) return new PolicySource(undefined);
  let s = sources.get(file);
  if (!s) sources.set(file, (s = new PolicySource(file, warn)));
  return s;
}

/** The operator's list, read from its file when that changed. */
export class PolicySource {
  private cached: { key: string; list: PolicyChange[] } | undefined;
  private reported = '';

  constructor(
    private readonly file: string | undefined,
    private readonly warn: (msg: string) => void = () => {},
  ) {}

  /** The current list (empty without POLICY_CHANGES). */
  list(): PolicyChange[] {
    if (!this.file) return [];
    let key: string;
    try {
      const st = fs.statSync(this.file);
      key = `${st.mtimeMs}:${st.size}`;
    } catch {
      key = 'missing';
    }
    if (this.cached?.key === key) return this.cached.list;
    try {
      const list = readPolicyFile(this.file);
      this.cached = { key, list };
      return list;
    } catch (err) {
      if (this.reported !== key) {
        this.reported = key;
        this.warn(`POLICY_CHANGES ${(err as Error).message}: keeping the last good list`);
      }
      return this.cached?.list ?? [];
    }
  }
}
