/**
 * The image proxy's fetch and cache (Stoat's January `proxy_file`): a remote image is fetched under the
 * outbound policy (`src/outbound/fetch.ts`), refused over PROXY_MAX_BYTES, and rendered by `proxyImage`
 * (`workers/media/pipeline.ts`): sniffed from the bytes, its header checked against PROXY_MAX_PIXELS per
 * frame; a still image is decoded once (first frame) and sent as a WebP fitted in the attachments box, an
 * animation is passed on as its own bytes without decoding a frame. Loads are bounded: PROXY_CONCURRENCY per
 * process and PROXY_CLIENT_CONCURRENCY per client run at once, and one more is refused at once (429, no
 * queue), so hostile images cannot fill the cores or the libuv pool that the rest of the server shares.
 * Results are kept in a per-process LRU bounded in bytes, with a TTL, keyed by the normalised target URL
 * (no fragment; other query parameters of our endpoint are never read), and concurrent requests for one
 * URL share one load.
 */
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { fetchGuarded, FetchFailed } from '../outbound/fetch.ts';
import { OutboundRefused } from '../outbound/policy.ts';
import { USER_AGENT } from '../previews/generate.ts';
import { RateLimited } from '../http/middleware/errors.ts';
import { MediaRejection, proxyImage } from '../../workers/media/pipeline.ts';
import { IMAGE_LIMITS, POLICIES } from '../../workers/media/policy.ts';

/** A proxied image, ready to send. */
export interface ProxiedImage {
  contentType: string;
  body: Buffer;
}

/** A byte-bounded LRU with a TTL (Map insertion order = recency). */
export class ByteLru {
  private readonly entries = new Map<string, { value: ProxiedImage; expires: number }>();
  private bytes = 0;
  constructor(
    private readonly maxBytes: number,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The cached value, refreshed as most recently used; undefined on a miss or once expired. */
  get(key: string): ProxiedImage | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    this.entries.delete(key);
    if (e.expires <= this.now()) {
      this.bytes -= e.value.body.length;
      return undefined;
    }
    this.entries.set(key, e);
    return e.value;
  }

  /** Stores a value and evicts the least recently used until the bound holds (a value over the bound is not kept). */
  set(key: string, value: ProxiedImage): void {
    const old = this.entries.get(key);
    if (old) {
      this.entries.delete(key);
      this.bytes -= old.value.body.length;
    }
    if (value.body.length > this.maxBytes) return;
    this.entries.set(key, { value, expires: this.now() + this.ttlMs });
    this.bytes += value.body.length;
    for (const [k, e] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(k);
      this.bytes -= e.value.body.length;
    }
  }

  /** Bytes held. */
  size(): number {
    return this.bytes;
  }
}

/** Parses the `url` query parameter: an absolute http(s) URL, else 400 ProxyError. */
export function proxyTarget(raw: unknown): string {
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > 2048) throw new AppError({ type: 'ProxyError' });
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new AppError({ type: 'ProxyError' });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AppError({ type: 'ProxyError' });
  // The fragment never reaches the remote server: it must not make a new cache entry either.
  url.hash = '';
  return url.href;
}

/** How long a refused client is told to wait before trying again (ms). */
export const PROXY_BUSY_RETRY_MS = 1000;

/** Counts loads in flight, in total and per client; `tryAcquire` never waits. */
export class ProxySlots {
  private total = 0;
  private readonly perClient = new Map<string, number>();
  constructor(
    private readonly max: number,
    private readonly maxPerClient: number,
  ) {}

  /** A release function when a slot is free for this client, else undefined. */
  tryAcquire(client: string): (() => void) | undefined {
    const mine = this.perClient.get(client) ?? 0;
    if (this.total >= this.max || mine >= this.maxPerClient) return undefined;
    this.total++;
    this.perClient.set(client, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.perClient.get(client) ?? 1) - 1;
      if (left > 0) this.perClient.set(client, left);
      else this.perClient.delete(client);
    };
  }

  /** Loads in flight (all clients). */
  inFlight(): number {
    return this.total;
  }
}

/** The image proxy of one media process. */
export class ImageProxy {
  private readonly cache: ByteLru;
  private readonly inFlight = new Map<string, Promise<ProxiedImage>>();
  /** Loads running now, in total and per client. */
  readonly slots: ProxySlots;
  constructor(private readonly config: Config) {
    this.cache = new ByteLru(config.proxy.cacheBytes, config.proxy.cacheTtlMs);
    this.slots = new ProxySlots(config.proxy.concurrency, config.proxy.clientConcurrency);
  }

  /**
   * The proxied image at `url` for `client` (cached; a load already running for the URL is shared and costs
   * no slot); throws the AppError to answer with, or `RateLimited` when no slot is free.
   */
  async get(url: string, client = 'internal'): Promise<ProxiedImage> {
    const hit = this.cache.get(url);
    if (hit) return hit;
    let p = this.inFlight.get(url);
    if (!p) {
      const release = this.slots.tryAcquire(client);
      if (!release) throw new RateLimited(PROXY_BUSY_RETRY_MS);
      p = this.load(url).finally(() => {
        release();
        this.inFlight.delete(url);
      });
      this.inFlight.set(url, p);
    }
    return p;
  }

  private async load(url: string): Promise<ProxiedImage> {
    const max = this.config.proxy.maxBytes;
    let r;
    try {
      r = await fetchGuarded(url, this.config.outbound, {
        timeoutMs: this.config.previews.timeoutMs,
        maxBytes: max,
        maxRedirects: this.config.previews.maxRedirects,
        headers: { 'user-agent': USER_AGENT, accept: 'image/*' },
      });
    } catch (err) {
      if (err instanceof OutboundRefused) throw new AppError({ type: 'InvalidOperation' });
      if (err instanceof FetchFailed) throw new AppError({ type: 'ProxyError' });
      throw err;
    }
    if (r.status < 200 || r.status >= 300) throw new AppError({ type: 'ProxyError' });
    if (r.truncated) throw new AppError({ type: 'FileTooLarge', max });
    let image: ProxiedImage;
    try {
      image = await proxyImage(r.body, {
        maxPixels: this.config.proxy.maxPixels,
        maxSide: IMAGE_LIMITS.maxSide,
        maxAnimationPixels: IMAGE_LIMITS.maxPixels,
        preview: POLICIES.attachments.preview,
      });
    } catch (err) {
      if (err instanceof MediaRejection) throw new AppError(err.body);
      throw err;
    }
    this.cache.set(url, image);
    return image;
  }
}
