/**
 * A recording WebSocket client for gateway tests: connects to a service's `/ws`, keeps every frame it
 * receives (in order, `Bulk` frames also unpacked into `events`), and waits for conditions with generous
 * timeouts (the machine is shared; never a fixed sleep). Presence changes (`UserUpdate {online}`) come and
 * go with every connection, so they are kept apart in `presence` (tests of presence read them there).
 */
import { WebSocket } from 'ws';
import { WAIT_MS } from './wait.ts';
import type { Service } from '../../src/service.ts';

/** A received frame. */
export type Frame = Record<string, any> & { type: string };

/** Options of a connection. */
export interface WsOptions {
  /** Sent as `?token=` (omitted when undefined). */
  token?: string | undefined;
  /** Extra query string (without `?`), e.g. `ready=users`. */
  query?: string;
  /** Answer the server's protocol pings (default true). */
  autoPong?: boolean;
}

/** A connected test client. */
export interface WsClient {
  ws: WebSocket;
  /** Every frame as received. */
  frames: Frame[];
  /** Every event, with `Bulk` frames unpacked in place. */
  events: Frame[];
  /** The presence changes received (not in `frames` or `events`). */
  presence: Frame[];
  /** The first presence change (from index `from`) matching `pred`; rejects after `timeoutMs`. */
  waitForPresence(pred: (e: Frame) => boolean, timeoutMs?: number, from?: number): Promise<Frame>;
  /** Resolves when the socket is open. */
  opened: Promise<void>;
  /** Resolves when the socket closed, with the close code and reason. */
  closed: Promise<{ code: number; reason: string }>;
  /** Sends a frame (JSON text). */
  send(frame: unknown): void;
  /** The first event (from index `from` of `events`) matching `pred`; rejects after `timeoutMs`. */
  waitFor(pred: (e: Frame) => boolean, timeoutMs?: number, from?: number): Promise<Frame>;
  /** Waits for `Ready` (after `Authenticated`). */
  ready(timeoutMs?: number): Promise<Frame>;
  /** Closes the socket. */
  close(): void;
}

const DEFAULT_TIMEOUT = WAIT_MS;

/** Whether a frame is a presence change: `UserUpdate` whose data is only `online`. */
export function isPresence(f: Frame): boolean {
  return f.type === 'UserUpdate' && typeof f.data === 'object' && f.data !== null && Object.keys(f.data).join() === 'online';
}

/** The gateway URL of a service. */
export function wsUrl(s: Pick<Service, 'apiUrl'>): string {
  return s.apiUrl.replace(/^http/, 'ws') + '/ws';
}

/** Opens a socket to the service's gateway. */
export function connectWs(s: Pick<Service, 'apiUrl'>, o: WsOptions = {}): WsClient {
  const params = ['version=1', 'format=json'];
  if (o.token !== undefined) params.push(`token=${encodeURIComponent(o.token)}`);
  if (o.query) params.push(o.query);
  const ws = new WebSocket(`${wsUrl(s)}?${params.join('&')}`, { autoPong: o.autoPong ?? true });
  const frames: Frame[] = [];
  const events: Frame[] = [];
  const presence: Frame[] = [];
  const waiters = new Set<() => void>();
  ws.on('message', (data, isBinary) => {
    if (isBinary) return;
    const f = JSON.parse(data.toString()) as Frame;
    if (isPresence(f)) presence.push(f);
    else frames.push(f);
    if (f.type === 'Bulk') events.push(...(f.v as Frame[]));
    else if (!isPresence(f)) events.push(f);
    for (const w of [...waiters]) w();
  });
  ws.on('error', () => {});
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.on('close', (code, reason) => {
      resolve({ code, reason: reason.toString() });
      for (const w of [...waiters]) w();
    });
  });
  const waitIn = (list: Frame[], pred: (e: Frame) => boolean, timeoutMs = DEFAULT_TIMEOUT, from = 0) =>
    new Promise<Frame>((resolve, reject) => {
      const check = () => {
        for (let i = from; i < list.length; i++) {
          if (pred(list[i]!)) {
            done();
            resolve(list[i]!);
            return true;
          }
        }
        return false;
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out waiting; received: ${JSON.stringify(list.map((e) => e.type))}`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(check as () => void);
      };
      if (!check()) waiters.add(check as () => void);
    });
  const waitFor = (pred: (e: Frame) => boolean, timeoutMs?: number, from?: number) => waitIn(events, pred, timeoutMs, from);
  const opened = new Promise<void>((resolve) => ws.once('open', () => resolve()));
  return {
    ws,
    opened,
    frames,
    events,
    presence,
    waitForPresence: (pred, timeoutMs, from) => waitIn(presence, pred, timeoutMs, from),
    closed,
    send: (frame) => ws.send(JSON.stringify(frame)),
    waitFor,
    ready: (timeoutMs) => waitFor((e) => e.type === 'Ready', timeoutMs),
    close: () => ws.close(),
  };
}

/** Opens a socket with `?token=` and waits for Ready. */
export async function connectReady(s: Pick<Service, 'apiUrl'>, token: string, o: Omit<WsOptions, 'token'> = {}): Promise<WsClient> {
  const c = connectWs(s, { ...o, token });
  await c.ready();
  return c;
}
