/**
 * Default avatars (`GET /users/:id/default_avatar`): a PNG that is a pure function of the user id, so every
 * process and every restart serves the same bytes for the same id. Like Stoat's (a coloured square chosen
 * from the id with a white mark on it), but with more variety: the SHA-256 of the id picks one of twelve
 * background colours and a horizontally mirrored 5 × 5 pattern of white cells (an identicon). Nothing is
 * stored: unknown and never-onboarded ids get an avatar too.
 */
import { createHash } from 'node:crypto';
import sharp from 'sharp';

/** Side of the square image in pixels. */
export const AVATAR_SIZE = 256;
/** Bumped whenever the drawing changes (part of the ETag, so caches drop the old picture). */
export const AVATAR_VERSION = 1;

/** Background colours (RGB), picked by the id's hash. */
export const PALETTE: ReadonlyArray<readonly [number, number, number]> = [
  [0xe0, 0x3a, 0x3e], [0xe8, 0x6a, 0x1c], [0xd4, 0x9b, 0x00], [0x5b, 0xa8, 0x3a],
  [0x1f, 0x9e, 0x89], [0x16, 0x8a, 0xc4], [0x3d, 0x5a, 0xfe], [0x6e, 0x45, 0xd8],
  [0xa8, 0x3c, 0xc4], [0xd6, 0x3c, 0x8a], [0x55, 0x6b, 0x7d], [0x8a, 0x5a, 0x3c],
];

const GRID = 5;
const MARGIN = 32;
const CELL = (AVATAR_SIZE - 2 * MARGIN) / GRID;

/** What the picture is made of: background colour index and the 5 × 5 cells (row-major, mirrored). */
export interface AvatarDesign {
  colour: number;
  cells: boolean[];
}

/** The design of an id's avatar (pure; exposed for tests). */
export function avatarDesign(id: string): AvatarDesign {
  const h = createHash('sha256').update(id).digest();
  const colour = h[0]! % PALETTE.length;
  const cells: boolean[] = [];
  let lit = 0;
  for (let row = 0; row < GRID; row++) {
    for (let col = 0; col < GRID; col++) {
      const src = col < 3 ? col : GRID - 1 - col; // mirrored: columns 3 and 4 repeat 1 and 0
      const bit = row * 3 + src;
      const on = ((h[1 + (bit >> 3)]! >> (bit & 7)) & 1) === 1;
      cells.push(on);
      if (on && col < 3) lit++;
    }
  }
  // An empty pattern would be a plain square: light the centre column instead.
  if (lit === 0) for (let row = 0; row < GRID; row++) cells[row * GRID + 2] = true;
  return { colour, cells };
}

/** Renders an id's avatar as PNG bytes. */
export async function renderDefaultAvatar(id: string): Promise<Buffer> {
  const { colour, cells } = avatarDesign(id);
  const [r, g, b] = PALETTE[colour]!;
  const px = Buffer.alloc(AVATAR_SIZE * AVATAR_SIZE * 3);
  for (let y = 0; y < AVATAR_SIZE; y++) {
    for (let x = 0; x < AVATAR_SIZE; x++) {
      const cx = Math.floor((x - MARGIN) / CELL);
      const cy = Math.floor((y - MARGIN) / CELL);
      const inside = x >= MARGIN && y >= MARGIN && cx < GRID && cy < GRID;
      const white = inside && cells[cy * GRID + cx]!;
      const o = (y * AVATAR_SIZE + x) * 3;
      px[o] = white ? 255 : r;
      px[o + 1] = white ? 255 : g;
      px[o + 2] = white ? 255 : b;
    }
  }
  return sharp(px, { raw: { width: AVATAR_SIZE, height: AVATAR_SIZE, channels: 3 } })
    .png({ compressionLevel: 9, palette: true, colours: 2, dither: 0 })
    .toBuffer();
}

/** A rendered avatar with its strong ETag (a digest of the bytes). */
export interface RenderedAvatar {
  png: Buffer;
  etag: string;
}

/**
 * Rendered avatars kept in memory (a browser asks for the same few ids over and over): at most `max`
 * entries, least recently used dropped first. Concurrent requests for one id share one rendering.
 */
export class DefaultAvatars {
  private readonly cache = new Map<string, Promise<RenderedAvatar>>();
  constructor(private readonly max = 2000) {}

  /** The avatar of an id (rendered once, then served from memory). */
  get(id: string): Promise<RenderedAvatar> {
    const hit = this.cache.get(id);
    if (hit) {
      this.cache.delete(id);
      this.cache.set(id, hit);
      return hit;
    }
    const made = renderDefaultAvatar(id).then((png) => ({
      png,
      etag: `"v${AVATAR_VERSION}-${createHash('sha256').update(png).digest('base64url').slice(0, 27)}"`,
    }));
    made.catch(() => this.cache.delete(id));
    this.cache.set(id, made);
    if (this.cache.size > this.max) this.cache.delete(this.cache.keys().next().value!);
    return made;
  }
}
