/**
 * Plumbing of the gateway benchmarks: real WebSocket clients of the events gateway (or of the raw `ws`
 * ceiling), opened in batches, each counting the frames whose text contains a marker without parsing them.
 */
import WebSocket from 'ws';

/** A client socket and what it has received. */
export interface BenchSocket {
  ws: WebSocket;
  /** Milliseconds from the connection's start to its Ready frame (0 when none is awaited). */
  readyMs: number;
  /** The Ready frame's text ('' when none is awaited). */
  readyText: string;
  /** Frames containing the counted marker so far. */
  counted: number;
}

/** The gateway URL of an API URL, with a session token. */
export function gatewayUrl(apiUrl: string, token: string): string {
  return `${apiUrl.replace(/^http/, 'ws')}/ws?version=1&format=json&token=${encodeURIComponent(token)}`;
}

/**
 * Opens a socket to `url`; resolves once a frame containing `readyMarker` arrived (or at once on open when
 * it is undefined). Afterwards it counts the frames that contain `countMarker`.
 */
export function openSocket(url: string, readyMarker: string | undefined, countMarker: string): Promise<BenchSocket> {
  const t0 = performance.now();
  const ws = new WebSocket(url, { perMessageDeflate: false });
  const s: BenchSocket = { ws, readyMs: 0, readyText: '', counted: 0 };
  return new Promise((resolve, reject) => {
    let ready = readyMarker === undefined;
    ws.once('error', reject);
    ws.once('close', (code) => {
      if (!ready) reject(new Error(`socket closed before Ready (${code})`));
    });
    if (ready) ws.once('open', () => resolve(s));
    ws.on('message', (data: Buffer) => {
      const text = data.toString();
      if (!ready) {
        if (!text.includes(readyMarker!)) return;
        ready = true;
        s.readyMs = performance.now() - t0;
        s.readyText = text;
        resolve(s);
        return;
      }
      if (text.includes(countMarker)) s.counted++;
    });
  });
}

/** Opens `n` sockets, `batch` at a time (`url(i)` for the i-th). */
export async function openSockets(n: number, url: (i: number) => string, readyMarker: string | undefined, countMarker: string, batch = 50): Promise<BenchSocket[]> {
  const out: BenchSocket[] = [];
  for (let i = 0; i < n; i += batch) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(batch, n - i) }, (_, j) => openSocket(url(i + j), readyMarker, countMarker)))));
  }
  return out;
}

/** Resolves when every socket has counted `target` frames (polled; rejects after `timeoutMs`). */
export async function allCounted(sockets: BenchSocket[], target: number, timeoutMs = 300_000): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    if (sockets.every((s) => s.counted >= target)) return performance.now();
    if (performance.now() - t0 > timeoutMs) {
      const short = sockets.filter((s) => s.counted < target).length;
      throw new Error(`${short} sockets got fewer than ${target} frames in ${timeoutMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Closes the sockets. */
export async function closeSockets(sockets: BenchSocket[]): Promise<void> {
  await Promise.all(
    sockets.map(
      (s) =>
        new Promise<void>((r) => {
          if (s.ws.readyState === WebSocket.CLOSED) return r();
          s.ws.once('close', () => r());
          s.ws.close();
          setTimeout(() => (s.ws.terminate(), r()), 5_000).unref();
        }),
    ),
  );
}
