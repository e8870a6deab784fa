/**
 * The client's address behind trusted proxies (TRUST_PROXY). The socket's peer is the client unless it is a
 * trusted proxy; then X-Forwarded-For is read from the right, skipping every trusted hop, and the first hop
 * that is not trusted is the client. An untrusted peer's X-Forwarded-For is ignored, so a client cannot pick
 * its own rate-limit key or per-address socket budget by sending the header. Empty TRUST_PROXY: the peer.
 */
import type { IncomingMessage } from 'node:http';
import type Koa from 'koa';
import ipaddr from 'ipaddr.js';
import type { Cidr } from '../outbound/policy.ts';

/** The address as ipaddr.js reads it, IPv4-mapped IPv6 (`::ffff:1.2.3.4`) as IPv4; undefined when not an address. */
function parse(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  try {
    return ipaddr.process(address);
  } catch {
    return undefined;
  }
}

function trusted(address: ipaddr.IPv4 | ipaddr.IPv6, proxies: readonly Cidr[]): boolean {
  return proxies.some(([range, bits]) => range.kind() === address.kind() && address.match(range, bits));
}

/** The client address of a connection from `peer` carrying `forwardedFor` (X-Forwarded-For), given the trusted proxies. */
export function clientAddress(peer: string, forwardedFor: string | string[] | undefined, proxies: readonly Cidr[]): string {
  let current = parse(peer);
  if (!current || proxies.length === 0 || !trusted(current, proxies)) return current?.toString() ?? peer;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : (forwardedFor ?? '')).split(',').map((h) => h.trim());
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = parse(hops[i]!);
    // A malformed hop ends the chain: the last address that was vouched for is the answer.
    if (!hop) break;
    current = hop;
    if (!trusted(hop, proxies)) break;
  }
  return current.toString();
}

/** The client address of a Node request (the events WebSocket's upgrade, or any HTTP request). */
export function requestAddress(req: IncomingMessage, proxies: readonly Cidr[]): string {
  return clientAddress(req.socket.remoteAddress ?? '', req.headers['x-forwarded-for'], proxies);
}

/** Outermost middleware: sets `ctx.ip` (rate-limit keys, logs) to the client address behind trusted proxies. */
export function clientAddressMiddleware(proxies: readonly Cidr[]): Koa.Middleware {
  return async function clientIp(ctx, next) {
    ctx.request.ip = requestAddress(ctx.req, proxies);
    await next();
  };
}
