/**
 * The per-tag upload policy as data (reference §7.1–7.2, DESIGN §4 "media server"): size cap in decimal
 * bytes, whether the tag takes raster images only, the box its WebP preview fits in (never enlarged), and
 * the decompression-bomb limits checked from an image's header before any pixel is decoded. The pipeline
 * (`pipeline.ts`) and the HTTP media server read this table; neither holds a rule of its own.
 */

/** Every upload tag autumn knows; any other path segment is not a tag. */
export const TAGS = ['attachments', 'avatars', 'backgrounds', 'icons', 'banners', 'emojis'] as const;

/** An upload tag (`POST /<tag>`, `GET /<tag>/<id>`). */
export type Tag = (typeof TAGS)[number];

/** A width × height box in pixels. */
export interface Box {
  /** Width in pixels. */
  readonly width: number;
  /** Height in pixels. */
  readonly height: number;
}

/** Decompression-bomb limits: an image over either is refused from its header, before decoding. */
export interface ImageLimits {
  /** Most pixels one decode may produce (width × height; for an animation, all frames together). */
  readonly maxPixels: number;
  /** Longest allowed side of one frame, in pixels. */
  readonly maxSide: number;
}

/** What one tag accepts and how its files are processed. */
export interface TagPolicy extends ImageLimits {
  /** The tag this policy belongs to. */
  readonly tag: Tag;
  /** Largest upload in bytes (decimal: 20 MB = 20,000,000); more → 422 `FileTooLarge {max}`. */
  readonly maxBytes: number;
  /** Only raster images (sniffed from the bytes) are accepted; anything else → 400 `FileTypeNotAllowed`. */
  readonly imageOnly: boolean;
  /** The box the WebP preview is fitted inside, keeping the aspect ratio and never enlarging. */
  readonly preview: Box;
}

/** Bomb limits shared by every tag: more than 40 megapixels, or a side over 10,000 px, is refused. */
export const IMAGE_LIMITS: ImageLimits = { maxPixels: 40_000_000, maxSide: 10_000 };

/** The policy of every tag (autumn's `Autumn.toml` limits and `[files.preview]` sizes). */
export const POLICIES: Readonly<Record<Tag, TagPolicy>> = {
  attachments: { tag: 'attachments', maxBytes: 20_000_000, imageOnly: false, preview: { width: 1280, height: 1280 }, ...IMAGE_LIMITS },
  avatars: { tag: 'avatars', maxBytes: 4_000_000, imageOnly: true, preview: { width: 128, height: 128 }, ...IMAGE_LIMITS },
  backgrounds: { tag: 'backgrounds', maxBytes: 6_000_000, imageOnly: true, preview: { width: 1280, height: 720 }, ...IMAGE_LIMITS },
  icons: { tag: 'icons', maxBytes: 2_500_000, imageOnly: true, preview: { width: 128, height: 128 }, ...IMAGE_LIMITS },
  banners: { tag: 'banners', maxBytes: 6_000_000, imageOnly: true, preview: { width: 480, height: 480 }, ...IMAGE_LIMITS },
  emojis: { tag: 'emojis', maxBytes: 500_000, imageOnly: true, preview: { width: 128, height: 128 }, ...IMAGE_LIMITS },
};

/** Whether a string (e.g. a URL path segment) names an upload tag. */
export function isTag(s: string): s is Tag {
  return (TAGS as readonly string[]).includes(s);
}
