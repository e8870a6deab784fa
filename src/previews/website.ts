/**
 * A page's preview card (Stoat's January `create_website_embed`): OpenGraph, Twitter-card and plain `<meta>`
 * tags and `<link rel=icon>` of the page's head, and the special players Stoat recognises from the URL
 * (YouTube, Twitch, Spotify, Soundcloud, Bandcamp, Apple Music, Streamable, Lightspeed, GIF sites).
 *
 * The HTML is hostile: it is decoded with the charset of its Content-Type (an unknown label falls back to
 * UTF-8, invalid bytes become U+FFFD), parsed by a streaming tokenizer that builds no tree (nesting depth costs
 * nothing), and parsing stops at `<body>` or `</head>`; the caller has already cut the bytes.
 */
import { Tokenizer } from 'htmlparser2';
import type { GeneratedEmbedObject } from '../domain/message/events.ts';

/** A Website embed. */
export type WebsiteEmbed = Extract<GeneratedEmbedObject, { type: 'Website' }>;
/** The `special` of a Website embed. */
export type Special = NonNullable<WebsiteEmbed['special']>;

/** Longest kept text fields (longer ones are cut at a character boundary). */
export const FIELD_LIMITS = { title: 256, description: 1000, site_name: 128, colour: 64, url: 2048 } as const;
/** Most `<meta>`/`<link>` tags read from one head (the rest are ignored). */
const MAX_TAGS = 1000;
/** Characters of one attribute value kept. */
const MAX_ATTRIBUTE = 8192;

/** The text of an HTML body in its declared charset (`content-type: text/html; charset=…`). */
export function decodeHtml(body: Buffer, contentType: string): string {
  const label = /charset\s*=\s*"?([^";\s]+)/i.exec(contentType)?.[1] ?? 'utf-8';
  let decoder: InstanceType<typeof TextDecoder>;
  try {
    decoder = new TextDecoder(label, { fatal: false });
  } catch {
    decoder = new TextDecoder('utf-8', { fatal: false });
  }
  return decoder.decode(body);
}

/**
 * `<meta>` by property/name → content, `<link>` by rel → href: the first of each wins, like a reader would.
 * Runs htmlparser2's tokenizer alone: no element stack is kept (the Parser's costs quadratic time on deeply
 * nested markup), so the cost is linear in the bytes whatever the nesting.
 */
export function readHead(html: string): { meta: Map<string, string>; link: Map<string, string> } {
  const meta = new Map<string, string>();
  const link = new Map<string, string>();
  let tags = 0;
  let done = false;
  let tag = '';
  let attrs = new Map<string, string>();
  let attrName = '';
  let attrValue = '';
  const finishTag = () => {
    if (done) return;
    if (tag === 'body') {
      done = true;
      return;
    }
    if (tag !== 'meta' && tag !== 'link') return;
    if (++tags > MAX_TAGS) {
      done = true;
      return;
    }
    if (tag === 'meta') {
      const key = (attrs.get('property') ?? attrs.get('name'))?.trim().toLowerCase();
      const content = attrs.get('content');
      if (key && content !== undefined && !meta.has(key)) meta.set(key, content);
    } else {
      const rel = attrs.get('rel')?.trim().toLowerCase();
      const href = attrs.get('href');
      if (rel && href !== undefined && !link.has(rel)) link.set(rel, href);
    }
  };
  const tokenizer = new Tokenizer(
    { decodeEntities: true },
    {
      onopentagname(start, end) {
        tag = html.slice(start, end).toLowerCase();
        attrs = new Map();
      },
      onattribname(start, end) {
        attrName = html.slice(start, end).toLowerCase();
        attrValue = '';
      },
      onattribdata(start, end) {
        if (attrValue.length < MAX_ATTRIBUTE) attrValue += html.slice(start, Math.min(end, start + MAX_ATTRIBUTE));
      },
      onattribentity(codepoint) {
        if (attrValue.length < MAX_ATTRIBUTE) attrValue += String.fromCodePoint(codepoint);
      },
      onattribend() {
        if (!attrs.has(attrName)) attrs.set(attrName, attrValue);
      },
      onopentagend() {
        finishTag();
      },
      onselfclosingtag() {
        finishTag();
      },
      onclosetag(start, end) {
        if (html.slice(start, end).toLowerCase() === 'head') done = true;
      },
      oncdata() {},
      oncomment() {},
      ondeclaration() {},
      onend() {},
      onprocessinginstruction() {},
      ontext() {},
      ontextentity() {},
    },
  );
  // Fed in slices so a stop at </head> or <body> skips the rest of a large page.
  const SLICE = 16_384;
  for (let i = 0; i < html.length && !done; i += SLICE) tokenizer.write(html.slice(i, i + SLICE));
  if (!done) tokenizer.end();
  return { meta, link };
}

/** Cuts a string to `max` code points. */
function cut(s: string, max: number): string {
  const cps = Array.from(s);
  return cps.length <= max ? s : cps.slice(0, max).join('');
}

/** A trimmed, non-empty, capped text value. */
function text(v: string | undefined, max: number): string | undefined {
  const t = v?.replace(/\s+/g, ' ').trim();
  return t ? cut(t, max) : undefined;
}

/** An absolute http(s) URL resolved against the page, or undefined. */
function absolute(v: string | undefined, base: URL): string | undefined {
  const t = v?.trim();
  if (!t) return undefined;
  try {
    const u = new URL(t, base);
    if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.href.length > FIELD_LIMITS.url) return undefined;
    return u.href;
  } catch {
    return undefined;
  }
}

/** A non-negative integer dimension (0 when absent or malformed). */
function dimension(v: string | undefined): number {
  const n = Number.parseInt(v ?? '', 10);
  return Number.isFinite(n) && n > 0 && n < 1_000_000 ? n : 0;
}

/** The first present value among keys. */
function first(meta: Map<string, string>, ...keys: string[]): string | undefined {
  for (const k of keys) {
    const v = meta.get(k);
    if (v !== undefined && v.trim() !== '') return v;
  }
  return undefined;
}

/** The Website embed of a page (before image/video sizes are looked up); null when it says nothing. */
export function websiteEmbed(originalUrl: string, pageUrl: URL, html: string): WebsiteEmbed | null {
  const { meta, link } = readHead(html);
  const e: WebsiteEmbed = { type: 'Website' };
  const title = text(first(meta, 'og:title', 'twitter:title', 'title'), FIELD_LIMITS.title);
  if (title) e.title = title;
  const description = text(first(meta, 'og:description', 'twitter:description', 'description'), FIELD_LIMITS.description);
  if (description) e.description = description;
  const image = absolute(first(meta, 'og:image', 'og:image:secure_url', 'og:image:url', 'twitter:image', 'twitter:image:src'), pageUrl);
  if (image) {
    e.image = {
      url: image,
      width: dimension(meta.get('og:image:width')),
      height: dimension(meta.get('og:image:height')),
      size: meta.get('twitter:card')?.trim() === 'summary_large_image' ? 'Large' : 'Preview',
    };
  }
  const video = absolute(first(meta, 'og:video', 'og:video:url', 'og:video:secure_url'), pageUrl);
  if (video) e.video = { url: video, width: dimension(meta.get('og:video:width')), height: dimension(meta.get('og:video:height')) };
  const icon = absolute(link.get('apple-touch-icon') ?? link.get('icon') ?? link.get('shortcut icon'), pageUrl);
  if (icon) e.icon_url = icon;
  const colour = text(meta.get('theme-color'), FIELD_LIMITS.colour);
  if (colour) e.colour = colour;
  const siteName = text(meta.get('og:site_name'), FIELD_LIMITS.site_name);
  if (siteName) e.site_name = siteName;
  e.url = absolute(meta.get('og:url'), pageUrl) ?? originalUrl;
  e.original_url = originalUrl;
  applySpecial(e, originalUrl);
  if (e.video) delete e.image;
  const said = e.title ?? e.description ?? e.image ?? e.video ?? e.site_name ?? e.special;
  return said === undefined ? null : e;
}

const RE = {
  youtube: /^(?:(?:https?:)?\/\/)?(?:(?:www|m)\.)?(?:youtube\.com|youtu\.be)(?:\/(?:[\w-]+\?v=|embed\/|v\/|shorts\/)?)([\w-]+)(?:\S+)?$/,
  timestamp: /(?:\?|&)(?:t|start)=(\w+)/,
  lightspeed: /^(?:https?:\/\/)?(?:\w+\.)?lightspeed\.tv\/([a-z0-9_]{4,25})/,
  twitch: /^(?:https?:\/\/)?(?:www\.|go\.)?twitch\.tv\/([a-z0-9_]+)($|\?)/,
  twitchVod: /^(?:https?:\/\/)?(?:www\.|go\.)?twitch\.tv\/videos\/([0-9]+)($|\?)/,
  twitchClip: /^(?:https?:\/\/)?(?:www\.|go\.)?twitch\.tv\/(?:[a-z0-9_]+)\/clip\/([A-Za-z0-9_-]+)($|\?)/,
  spotify: /^(?:https?:\/\/)?open\.spotify\.com\/(track|user|artist|album|playlist)\/([A-Za-z0-9]+)/,
  soundcloud: /^(?:https?:\/\/)?soundcloud\.com\/([a-zA-Z0-9-]+)\/([A-Za-z0-9-]+)/,
  bandcamp: /^(?:https?:\/\/)?(?:[A-Za-z0-9_-]+)\.bandcamp\.com\/(track|album)\/([A-Za-z0-9_-]+)/,
  appleMusic: /^(?:https?:\/\/)?music\.apple\.com\/(?:[a-z]{2}\/)?album\/(?:[a-zA-Z0-9-]+)\/(\d+)(?:\?i=(\d+))?/,
  streamable: /^(?:https?:\/\/)?(?:www\.)?streamable\.com\/([\w-]+)/,
  gif: /^(?:https?:\/\/)?(www\.)?(gifbox\.me\/view|yiffbox\.me\/view|tenor\.com\/view|giphy\.com\/gifs|gfycat\.com|redgifs\.com\/watch)\/[\w-]+/,
};

/** Stoat's brand colours of the special players. */
const COLOURS: Partial<Record<Special['type'], string>> = {
  YouTube: '#FF424F',
  Twitch: '#7B68EE',
  Lightspeed: '#7445D9',
  Spotify: '#1ABC9C',
  Soundcloud: '#FF7F50',
  AppleMusic: '#FA233B',
};

/** The special player a URL (and, for Bandcamp, the page's video) names, if any. */
export function specialOf(url: string, originalUrl: string, video?: { url: string }): Special | undefined {
  let m: RegExpExecArray | null;
  if ((m = RE.streamable.exec(url))) return { type: 'Streamable', id: m[1]! };
  if ((m = RE.youtube.exec(url))) {
    const t = RE.timestamp.exec(url);
    return t ? { type: 'YouTube', id: m[1]!, timestamp: t[1]! } : { type: 'YouTube', id: m[1]! };
  }
  if ((m = RE.lightspeed.exec(url))) return { type: 'Lightspeed', content_type: 'Channel', id: m[1]! };
  if ((m = RE.twitch.exec(url))) return { type: 'Twitch', content_type: 'Channel', id: m[1]! };
  if ((m = RE.twitchVod.exec(url))) return { type: 'Twitch', content_type: 'Video', id: m[1]! };
  if ((m = RE.twitchClip.exec(url))) return { type: 'Twitch', content_type: 'Clip', id: m[1]! };
  if ((m = RE.spotify.exec(url))) return { type: 'Spotify', content_type: m[1]!, id: m[2]! };
  if (RE.soundcloud.test(url)) return { type: 'Soundcloud' };
  if (RE.bandcamp.test(url)) {
    if (!video) return undefined;
    const track = /track=(\d+)/.exec(video.url);
    if (track) return { type: 'Bandcamp', content_type: 'Track', id: track[1]! };
    const album = /album=(\d+)/.exec(video.url);
    return album ? { type: 'Bandcamp', content_type: 'Album', id: album[1]! } : undefined;
  }
  if (RE.gif.test(url)) return { type: 'GIF' };
  if ((m = RE.appleMusic.exec(originalUrl))) return m[2] ? { type: 'AppleMusic', album_id: m[1]!, track_id: m[2] } : { type: 'AppleMusic', album_id: m[1]! };
  return undefined;
}

/** Sets `special` (judged on the page's canonical URL, as Stoat does) and the player's colour. */
function applySpecial(e: WebsiteEmbed, originalUrl: string): void {
  const special = specialOf(e.url ?? originalUrl, originalUrl, e.video);
  if (!special) return;
  e.special = special;
  // Stoat: YouTube blocks datacentre fetches; without a video the card shows just "YouTube" and the player.
  if (special.type === 'YouTube' && !e.video) {
    e.title = 'YouTube';
    delete e.description;
    delete e.colour;
    delete e.icon_url;
    delete e.site_name;
  }
  const colour = COLOURS[special.type];
  if (colour) e.colour = colour;
}
