/**
 * The image proxy's fetch and cache (Stoat's January `proxy_file`): a remote image is fetched under the
 * outbound policy (`src/outbound/fetch.ts`), refused over PROXY_MAX_BYTES or when it is not a raster image
 * (sniffed from the bytes, as uploads are), and re-encoded by the media pipeline: a still image becomes its
 * WebP preview (fitted in the attachments box), an animation is re-encoded in its own format with every frame;
 * no metadata survives either way. Results are kept in a per-process LRU bounded in bytes, with a TTL.
 */
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { fetchGuarded, FetchFailed } from '../outbound/fetch.ts';
import { OutboundRefused } from '../outbound/policy.ts';
import { USER_AGENT } from '../previews/generate.ts';
import { MediaRejection, processUpload } from '../../workers/media/pipeline.ts';
import { POLICIES } from '../../workers/media/policy.ts';

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
  return url.href;
}

/** The image proxy of one media process. */
export class ImageProxy {
  private readonly cache: ByteLru;
  private readonly inFlight = new Map<string, Promise<ProxiedImage>>();
  constructor(private readonly config: Config) {
    this.cache = new ByteLru(config.proxy.cacheBytes, config.proxy.cacheTtlMs);
  }

  /** The re-encoded image at `url` (cached); throws the AppError to answer with. */
  async get(url: string): Promise<ProxiedImage> {
    const hit = this.cache.get(url);
    if (hit) return hit;
    let p = this.inFlight.get(url);
    if (!p) {
      p = this.load(url).finally(() => this.inFlight.delete(url));
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
    let processed;
    try {
      processed = await processUpload(r.body, 'proxy', { ...POLICIES.attachments, imageOnly: true, maxBytes: max });
    } catch (err) {
      if (err instanceof MediaRejection) throw new AppError(err.body);
      throw err;
    }
    const image: ProxiedImage =
      processed.animated || processed.preview === null
        ? { contentType: processed.contentType, body: processed.original }
        : { contentType: 'image/webp', body: processed.preview };
    this.cache.set(url, image);
    return image;
  }
}
