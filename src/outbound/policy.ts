/**
 * Where outbound requests may go (link previews, the image proxy, push endpoints). The danger is server-side
 * request forgery: a URL a user controls must not reach loopback, the private network or a cloud metadata
 * address. Only globally routable unicast addresses are reachable by default; `OUTBOUND_ALLOW_PRIVATE` names the
 * other ranges an operator opens on purpose (tests, intranets).
 *
 * The check happens on the address actually connected to: names resolve once, inside the socket's `lookup`, and
 * the connection goes to an address that passed. A second resolution (DNS rebinding) cannot slip in between.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

/** One parsed CIDR range. */
export type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** The ranges that may be reached besides global unicast (parsed `OUTBOUND_ALLOW_PRIVATE`). */
export interface OutboundPolicy {
  /** Ranges allowed although not global unicast. */
  allow: readonly Cidr[];
}

/** An outbound request was refused by the policy (scheme, or an address outside what may be reached). */
export class OutboundRefused extends Error {
  /** Node-style error code, so socket errors and refusals can be told apart. */
  readonly code = 'EOUTBOUNDREFUSED';
  constructor(message: string) {
    super(message);
    this.name = 'OutboundRefused';
  }
}

/**
 * Parses `OUTBOUND_ALLOW_PRIVATE`: comma-separated CIDRs (`127.0.0.0/8,10.1.0.0/16,fd00::/8`); a bare address
 * counts as a single host. Throws on a malformed entry.
 */
export function parseAllowList(value: string | undefined): Cidr[] {
  const out: Cidr[] = [];
  for (const raw of (value ?? '').split(',')) {
    const s = raw.trim();
    if (s === '') continue;
    if (s.includes('/')) {
      out.push(ipaddr.parseCIDR(s) as Cidr);
    } else {
      const a = ipaddr.parse(s);
      out.push([a, a.kind() === 'ipv4' ? 32 : 128]);
    }
  }
  return out;
}

/** True when `value` is a valid `OUTBOUND_ALLOW_PRIVATE` (for configuration validation). */
export function isValidAllowList(value: string): boolean {
  try {
    parseAllowList(value);
    return true;
  } catch {
    return false;
  }
}

/** The policy for an allow-list value (undefined or empty: global unicast only). */
export function outboundPolicy(allowPrivate?: string): OutboundPolicy {
  return { allow: parseAllowList(allowPrivate) };
}

/** Unwraps IPv4-mapped IPv6 (`::ffff:127.0.0.1`) so it is judged as the IPv4 address it reaches. */
function normalise(address: string): ipaddr.IPv4 | ipaddr.IPv6 {
  const a = ipaddr.parse(address);
  if (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress()) return (a as ipaddr.IPv6).toIPv4Address();
  return a;
}

/**
 * Whether an IP address may be connected to: global unicast, or inside an allowed range. Everything else
 * (loopback, private, link-local incl. 169.254.169.254, unique-local, carrier-grade NAT, multicast, reserved,
 * unspecified, 6to4/Teredo wrappers) is refused.
 */
export function addressAllowed(address: string, policy: OutboundPolicy): boolean {
  if (!ipaddr.isValid(address)) return false;
  const a = normalise(address);
  for (const [range, bits] of policy.allow) {
    if (range.kind() === a.kind() && a.match(range as never, bits)) return true;
  }
  return a.range() === 'unicast';
}

/** A `lookup` for sockets that resolves once and hands out only addresses the policy allows. */
export function guardedLookup(policy: OutboundPolicy): LookupFunction {
  return ((hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err);
      const ok = (addresses as dns.LookupAddress[]).filter((a) => addressAllowed(a.address, policy));
      if (ok.length === 0) return callback(new OutboundRefused(`${hostname} resolves only to addresses outbound requests may not reach`));
      if (options.all) return callback(null, ok);
      callback(null, ok[0]!.address, ok[0]!.family);
    });
  }) as LookupFunction;
}

/**
 * Checks a URL before any request: http or https only, no credentials, and an IP-literal host must itself be
 * allowed (sockets skip `lookup` for literals). Returns the parsed URL; throws `OutboundRefused`.
 */
export function checkUrl(input: string | URL, policy: OutboundPolicy): URL {
  let url: URL;
  try {
    url = typeof input === 'string' ? new URL(input) : input;
  } catch {
    throw new OutboundRefused('not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new OutboundRefused(`scheme ${url.protocol} is not fetched`);
  if (url.username !== '' || url.password !== '') throw new OutboundRefused('URLs with credentials are not fetched');
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (net.isIP(host) !== 0 && !addressAllowed(host, policy)) throw new OutboundRefused(`${host} may not be reached`);
  return url;
}

/** HTTP and HTTPS agents whose connections go only where the policy allows (for `http.request` and libraries taking an agent). */
export function guardedAgents(policy: OutboundPolicy, options: http.AgentOptions = {}): { http: http.Agent; https: https.Agent } {
  const lookup = guardedLookup(policy);
  return {
    http: new http.Agent({ ...options, lookup }),
    https: new https.Agent({ ...options, lookup }),
  };
}
