/**
 * One URL's preview (Stoat's January `generate_embed`): a guarded fetch (`src/outbound/fetch.ts`), then by
 * Content-Type: an HTML page → Website embed (image and video sizes looked up when the page leaves them out,
 * dropped when they cannot be); an image → Image embed (its size read from the header by sharp); a video →
 * Video embed (size from an MP4/MOV header, as uploads do); anything else → no preview. Results, "no preview"
 * included, are cached per URL in Redis with a TTL and a bound on the number of URLs; a failed fetch (refused,
 * timed out, an error status) is "no preview" and is cached too, so a dead link is not fetched per message.
 */
import { createHash } from 'node:crypto';
import type { RedisClient } from '../redis.ts';
import sharp from 'sharp';
import type { PreviewConfig } from '../config.ts';
import type { GeneratedEmbedObject } from '../domain/message/events.ts';
import { fetchGuarded, type FetchedResponse } from '../outbound/fetch.ts';
import type { OutboundPolicy } from '../outbound/policy.ts';
import { IMAGE_LIMITS, POLICIES } from '../../workers/media/policy.ts';
import { processUpload } from '../../workers/media/pipeline.ts';
import { decodeHtml, websiteEmbed } from './website.ts';

/** The User-Agent of preview and proxy fetches. */
export const USER_AGENT = 'Mozilla/5.0 (compatible; January/2.0; +https://github.com/stoatchat/stoatchat)';

/** What generating previews needs. */
export interface PreviewContext {
  policy: OutboundPolicy;
  limits: PreviewConfig;
  /** The cache's Redis and key prefix (REDIS_PREFIX). */
  redis: RedisClient;
  prefix: string;
}

/** The fetch limits of a preview. */
function limitsOf(ctx: PreviewContext, maxBytes = ctx.limits.maxBytes) {
  return {
    timeoutMs: ctx.limits.timeoutMs,
    maxBytes,
    maxRedirects: ctx.limits.maxRedirects,
    headers: { 'user-agent': USER_AGENT, accept: 'text/html,application/xhtml+xml,image/*,video/*;q=0.8,*/*;q=0.5', 'accept-language': 'en-US,en;q=0.5' },
  };
}

/** Width and height of an image from its header (no pixel decoded); null when it is not one sharp reads. */
async function imageSize(bytes: Buffer): Promise<{ width: number; height: number } | null> {
  try {
    const m = await sharp(bytes, { limitInputPixels: IMAGE_LIMITS.maxPixels, failOn: 'none' }).metadata();
    if (!m.width || !m.height) return null;
    // EXIF orientations 5–8 swap the sides, as displayed.
    return (m.orientation ?? 1) >= 5 ? { width: m.height, height: m.width } : { width: m.width, height: m.height };
  } catch {
    return null;
  }
}

/** Width and height of a video from its container header (MP4/MOV/3GP); null otherwise. */
async function videoSize(bytes: Buffer): Promise<{ width: number; height: number } | null> {
  try {
    const p = await processUpload(bytes, 'video', POLICIES.attachments);
    return p.metadata.type === 'Video' && p.metadata.width && p.metadata.height ? { width: p.metadata.width, height: p.metadata.height } : null;
  } catch {
    return null;
  }
}

/** The media type of a response (`image/png; q…` → `image/png`). */
function mediaType(r: FetchedResponse): string {
  return r.contentType.split(';')[0]!.trim();
}

/** Fetches a media URL and reads its size; null when it is not that kind of media or cannot be read. */
async function mediaSize(url: string, kind: 'image' | 'video', ctx: PreviewContext): Promise<{ width: number; height: number } | null> {
  let r: FetchedResponse;
  try {
    r = await fetchGuarded(url, ctx.policy, limitsOf(ctx));
  } catch {
    return null;
  }
  if (r.status < 200 || r.status >= 300 || !mediaType(r).startsWith(`${kind}/`)) return null;
  return kind === 'image' ? imageSize(r.body) : videoSize(r.body);
}

/** Generates one URL's embed without the cache; null = no preview. */
export async function generateEmbed(url: string, ctx: PreviewContext): Promise<GeneratedEmbedObject | null> {
  let r: FetchedResponse;
  try {
    r = await fetchGuarded(url, ctx.policy, limitsOf(ctx));
  } catch {
    return null;
  }
  if (r.status < 200 || r.status >= 300) return null;
  const type = mediaType(r);
  if (type === 'text/html' || type === 'application/xhtml+xml') {
    const e = websiteEmbed(url, r.url, decodeHtml(r.body, r.contentType));
    if (!e) return null;
    if (!e.special && e.video && (e.video.width === 0 || e.video.height === 0)) {
      const size = await mediaSize(e.video.url, 'video', ctx);
      if (size) e.video = { url: e.video.url, ...size };
      else delete e.video;
    }
    if (!e.special && e.image && (e.image.width === 0 || e.image.height === 0)) {
      const size = await mediaSize(e.image.url, 'image', ctx);
      if (size) e.image = { ...e.image, ...size };
      else delete e.image;
    }
    return e;
  }
  if (type.startsWith('image/')) {
    if (r.truncated) return null;
    const size = await imageSize(r.body);
    return size ? { type: 'Image', url, ...size, size: 'Large' } : null;
  }
  if (type.startsWith('video/')) {
    const size = await videoSize(r.body);
    return size ? { type: 'Video', url, ...size } : null;
  }
  return null;
}

/** Redis keys of the preview cache. */
export function previewCacheKeys(prefix: string) {
  return {
    /** The cached result of one URL (JSON `{embed}`; `embed` null = no preview). */
    entry: (url: string) => `${prefix}{previews}:url:${createHash('sha256').update(url).digest('hex')}`,
    /** Sorted set of cached entry keys by time of caching (to keep the bound). */
    index: `${prefix}{previews}:index`,
  };
}

/** The cached preview of a URL: undefined on a miss. */
export async function cachedEmbed(url: string, ctx: PreviewContext): Promise<GeneratedEmbedObject | null | undefined> {
  const raw = await ctx.redis.get(previewCacheKeys(ctx.prefix).entry(url));
  if (raw === null) return undefined;
  try {
    return (JSON.parse(raw) as { embed: GeneratedEmbedObject | null }).embed;
  } catch {
    return undefined;
  }
}

/** Caches a URL's preview and trims the cache to `cacheMax` URLs (the oldest entries go). */
export async function cacheEmbed(url: string, embed: GeneratedEmbedObject | null, ctx: PreviewContext, now = Date.now()): Promise<void> {
  const keys = previewCacheKeys(ctx.prefix);
  const key = keys.entry(url);
  await ctx.redis
    .multi()
    .set(key, JSON.stringify({ embed }), 'EX', ctx.limits.cacheTtlSeconds)
    .zadd(keys.index, now, key)
    // Entries past their TTL are gone already: forget them in the index too.
    .zremrangebyscore(keys.index, '-inf', now - ctx.limits.cacheTtlSeconds * 1000)
    .exec();
  const excess = (await ctx.redis.zcard(keys.index)) - ctx.limits.cacheMax;
  if (excess > 0) {
    const popped = await ctx.redis.zpopmin(keys.index, excess);
    const old = popped.filter((_, i) => i % 2 === 0);
    if (old.length > 0) await ctx.redis.del(...old);
  }
}

/** A URL's preview through the cache. */
export async function previewOf(url: string, ctx: PreviewContext): Promise<GeneratedEmbedObject | null> {
  const hit = await cachedEmbed(url, ctx);
  if (hit !== undefined) return hit;
  const embed = await generateEmbed(url, ctx);
  await cacheEmbed(url, embed, ctx);
  return embed;
}
