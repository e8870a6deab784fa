/**
 * Mentions in message content (reference §3.7, Revolt's `crates/core/parser`): `<@ULID>` a user, `<%ULID>` a
 * role, `@everyone`, `@online`. Nothing inside backtick code spans or fenced code blocks counts, nor anything
 * escaped with a backslash. Pure; the sender's permissions and the channel's members decide what is kept.
 */

/** What the content mentions, each id once, in order of first appearance. */
export interface ParsedMentions {
  users: string[];
  roles: string[];
  everyone: boolean;
  online: boolean;
}

const ID = /^[0-9A-Za-z]{26}$/;

/** Length of the run of backticks starting at `i`. */
function backtickRun(s: string, i: number): number {
  let n = 0;
  while (s.charCodeAt(i + n) === 96 /* ` */) n++;
  return n;
}

/** Index just after the closing run of exactly `n` backticks at or after `from`, or -1 when it is never closed. */
function closingRun(s: string, from: number, n: number): number {
  let i = from;
  while (i < s.length) {
    const at = s.indexOf('`', i);
    if (at < 0) return -1;
    const run = backtickRun(s, at);
    if (run === n) return at + run;
    i = at + run;
  }
  return -1;
}

/** Parses the mentions of a message's content. */
export function parseMentions(content: string): ParsedMentions {
  const users = new Set<string>();
  const roles = new Set<string>();
  let everyone = false;
  let online = false;
  let i = 0;
  while (i < content.length) {
    const c = content[i];
    if (c === '\\') {
      // An escaped character is literal text.
      i += 2;
      continue;
    }
    if (c === '`') {
      // A code span or block: skip to the matching run of backticks (an unmatched run is literal text).
      const n = backtickRun(content, i);
      const end = closingRun(content, i + n, n);
      i = end < 0 ? i + n : end;
      continue;
    }
    if (c === '<' && (content[i + 1] === '@' || content[i + 1] === '%') && content[i + 28] === '>') {
      const id = content.slice(i + 2, i + 28);
      if (ID.test(id)) {
        (content[i + 1] === '@' ? users : roles).add(id);
        i += 29;
        continue;
      }
    }
    if (c === '@') {
      if (content.startsWith('@everyone', i)) {
        everyone = true;
        i += 9;
        continue;
      }
      if (content.startsWith('@online', i)) {
        online = true;
        i += 7;
        continue;
      }
    }
    i++;
  }
  return { users: [...users], roles: [...roles], everyone, online };
}
