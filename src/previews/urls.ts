/**
 * Which URLs of a message's content get previews (Stoat's `Embed::generate`): code spans and fenced blocks
 * are ignored, and so is a link wrapped in angle brackets (`<https://…>`, the sender's way to suppress its
 * preview); the rest are http(s) URLs as a linkifier finds them (trailing punctuation and unbalanced closing
 * brackets are not part of a URL), distinct, in order, at most `max`.
 */

/** Stoat's limit of embeds per message (and so of previewed URLs). */
export const MAX_PREVIEWED_URLS = 5;
/** Longer URLs are not previewed. */
export const MAX_URL_LENGTH = 2048;

const CODE = /```[\s\S]+?```|`[^`]+?`/g;
const SUPPRESSED = /<https?:[^\s>]+>/gi;
const URL_RE = /https?:\/\/[^\s<>"'`]+/gi;
const TRAILING = /[.,:;!?'"*_~]+$/;

/** Drops a trailing closing bracket the URL did not open (`(see https://x.y/a)` → `https://x.y/a`). */
function balance(url: string): string {
  let u = url;
  for (;;) {
    const trimmed = u.replace(TRAILING, '');
    const last = trimmed.at(-1);
    const open = last === ')' ? '(' : last === ']' ? '[' : last === '}' ? '{' : undefined;
    if (open !== undefined && trimmed.split(last!).length - 1 > trimmed.split(open).length - 1) {
      u = trimmed.slice(0, -1);
      continue;
    }
    return trimmed;
  }
}

/** The URLs of `content` to preview, in order of first appearance. */
export function previewUrls(content: string, max = MAX_PREVIEWED_URLS): string[] {
  const text = content.replace(CODE, ' ').replace(SUPPRESSED, ' ');
  const out: string[] = [];
  for (const m of text.matchAll(URL_RE)) {
    const raw = balance(m[0]);
    if (raw.length > MAX_URL_LENGTH) continue;
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      continue;
    }
    if (url.hostname === '') continue;
    if (!out.includes(url.href)) out.push(url.href);
    if (out.length >= max) break;
  }
  return out;
}
