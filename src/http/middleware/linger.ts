/**
 * Answering before a request's body was read to the end (a body over its cap, a refused or timed-out upload,
 * an inflating body cut at the JSON limit) leaves the connection unusable: the rest of that body is still on
 * the wire. Such a connection is closed after the answer — but not at once. Closing a socket with unread
 * input makes the kernel send a TCP reset, and a reset can destroy the answer before the client has read it
 * (the client sees ECONNRESET/EPIPE instead of the JSON error). So this is a "lingering close", as web
 * servers do it: the answer carries `Connection: close`; after it our side of the connection ends (FIN), and
 * what the client still sends is read and discarded until it ends its side or `lingerMs` pass; then the
 * socket is destroyed.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type Koa from 'koa';

/** At most this long (ms) a connection keeps reading what is left of an unread request after its answer. */
export const LINGER_MS = 2000;

/** Lingering close for every request answered before its body was complete (outermost, after the log). */
export function closeUnreadRequests(lingerMs = LINGER_MS): Koa.Middleware {
  return async function lingerOnUnreadBody(ctx, next) {
    try {
      await next();
    } finally {
      // `complete`: the parser has seen the end of the request (always so for a request without a body).
      if (!ctx.req.complete && !ctx.headerSent) {
        ctx.set('Connection', 'close');
        linger(ctx.req, lingerMs);
      }
    }
  };
}

/** Discards the rest of `req` and makes its socket end gracefully once the answer is out. */
function linger(req: IncomingMessage, lingerMs: number): void {
  // Whatever was parsing the body (busboy, an inflater) has given up: detach it and let the bytes drain.
  req.unpipe();
  req.resume();
  const socket = req.socket;
  // Node's HTTP server calls `destroySoon()` once a `Connection: close` answer is written; its own version
  // destroys the socket as soon as the answer is flushed, with input still unread.
  socket.destroySoon = function lingeringDestroySoon(this: Socket) {
    if (this.writable) this.end();
    if (this.readableEnded || this.destroyed) {
      this.destroy();
      return;
    }
    const cut = setTimeout(() => this.destroy(), lingerMs);
    cut.unref();
    this.once('end', () => this.destroy());
    this.once('close', () => clearTimeout(cut));
    // Keep reading (the HTTP parser feeds the discarded request) even if nothing else does.
    this.resume();
  };
}
