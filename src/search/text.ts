/**
 * Text handling of the message search index. The index tokenises with FTS5's `unicode61` tokenizer
 * (`remove_diacritics 2`): words of any script that separates words with spaces or punctuation (Latin,
 * Cyrillic, Greek, Arabic, Hebrew, Devanagari, Hangul words …) are tokens, folded to lower case and without
 * diacritics, so `cafe` finds `Café` and `МОСКВА` finds `москва`. Scripts written without spaces (Han,
 * Hiragana, Katakana, Thai, Lao, Khmer, Myanmar) would come out as whole runs of text; before indexing,
 * `segment` puts a space around each of their characters, so each is a token and a query for `東京`
 * becomes the phrase `東 京` — two adjacent tokens — which finds it inside `東京タワーに行った` whatever the
 * query's length (a trigram index would need three characters). Hangul is split too: particles are written
 * onto words (`서울에서`), so `서울` must match inside a word.
 *
 * Queries follow Stoat's (MongoDB `$text`) syntax: words are alternatives (any of them matches; Relevance
 * ranks messages with more of them higher), a `"quoted phrase"` must appear, `-word` or `-"phrase"` must not.
 */

/** Characters of scripts written without spaces between words, each with its combining marks. */
const UNSPACED = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}\u3005\u30FC][\p{M}]*/gu;

/** Greek letters with their accents and diaeresis (unicode61 folds diacritics of Latin letters only). */
const ACCENTED_GREEK = /(\p{Script=Greek})\p{M}+/gu;

/**
 * Text as it goes into the index (and into a phrase of a query): unspaced scripts one token per character,
 * Greek without accents (`ελληνικα` finds `Ελληνικά`, as `cafe` finds `Café`).
 */
export function segment(text: string): string {
  return text.normalize('NFD').replace(ACCENTED_GREEK, '$1').normalize('NFC').replace(UNSPACED, (ch) => ` ${ch} `);
}

/** One FTS5 phrase (double quotes doubled inside). */
function phrase(text: string): string {
  return `"${segment(text).replace(/"/g, '""')}"`;
}

/** A phrase has at least one token (a letter, a digit, or a character of an unspaced script). */
function hasToken(text: string): boolean {
  return /[\p{L}\p{N}]/u.test(text);
}

/** A Stoat search query as FTS5 phrases. */
export interface ParsedQuery {
  /** Words: a message needs at least one of them (Relevance ranks by how many it has). */
  any: string[];
  /** Quoted phrases: a message needs every one. */
  all: string[];
  /** Excluded words and phrases. */
  none: string[];
}

/** Parses a Stoat (MongoDB `$text`) query; parts without a letter or digit are dropped. */
export function parseQuery(query: string): ParsedQuery {
  const q: ParsedQuery = { any: [], all: [], none: [] };
  for (const m of query.matchAll(/(-?)"([^"]*)"|(-?)(\S+)/g)) {
    const negated = (m[1] ?? m[3]) === '-';
    const quoted = m[2] !== undefined;
    const text = quoted ? m[2]! : m[4]!;
    if (!hasToken(text)) continue;
    const list = negated ? q.none : quoted ? q.all : q.any;
    const p = phrase(text);
    if (!list.includes(p)) list.push(p);
  }
  return q;
}

/**
 * The FTS5 MATCH expression of a parsed query in one channel — with `only`, one of its words stands for
 * all of them (the messages that have that word and meet the rest) — or null when there is nothing to find
 * (no word and no phrase: only exclusions, which MongoDB answers with nothing either).
 */
export function matchOf(q: ParsedQuery, channelId: string, only?: string): string | null {
  const words = only !== undefined ? [only] : q.any;
  const positive = [...(words.length ? [`(${words.join(' OR ')})`] : []), ...q.all];
  if (positive.length === 0) return null;
  let expr = positive.join(' AND ');
  for (const n of q.none) expr = `(${expr}) NOT ${n}`;
  return `channel : ${phrase(channelId)} AND body : (${expr})`;
}

/** The FTS5 MATCH expression of a Stoat search query in one channel (see `matchOf`). */
export function matchExpression(query: string, channelId: string): string | null {
  return matchOf(parseQuery(query), channelId);
}
