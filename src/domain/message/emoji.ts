/**
 * What counts as an emoji in a reaction (reference §3.9): a Unicode emoji (one RGI emoji sequence; U+FE0F
 * variation selectors are optional, as Revolt strips them before comparing) or the id of a custom emoji.
 */

// Built at run time: the `v` flag (Unicode sets, `\p{RGI_Emoji}`) is newer than the compile target.
const RGI_EMOJI = new RegExp('^\\p{RGI_Emoji}$', 'v');
const VS16 = /\uFE0F/g;

/** Longest reaction key accepted (the longest RGI sequences are well below this). */
export const MAX_EMOJI_LENGTH = 64;

/** True for one Unicode emoji, with or without its U+FE0F variation selectors. */
export function isUnicodeEmoji(s: string): boolean {
  if (s.length === 0 || s.length > MAX_EMOJI_LENGTH) return false;
  if (RGI_EMOJI.test(s)) return true;
  const bare = s.replace(VS16, '');
  if (bare.length === 0) return false;
  if (RGI_EMOJI.test(bare)) return true;
  // A sequence written without its selectors: put one back after the first code point.
  const first = String.fromCodePoint(bare.codePointAt(0)!);
  return RGI_EMOJI.test(first + '\uFE0F' + bare.slice(first.length));
}

/** True for something shaped like a custom emoji id: its upload's id (a 42-character nanoid, or a ULID of an older upload). */
export function isCustomEmojiId(s: string): boolean {
  return /^[A-Za-z0-9_-]{42}$/.test(s) || /^[0-9A-HJKMNP-TV-Z]{26}$/.test(s);
}

/** How a reaction key is to be treated: a Unicode emoji, a custom emoji id to look up, or neither. */
export function emojiKind(s: string): 'unicode' | 'custom' | 'invalid' {
  if (isCustomEmojiId(s)) return 'custom';
  if (isUnicodeEmoji(s)) return 'unicode';
  return 'invalid';
}
