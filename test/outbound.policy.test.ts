import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { loadConfig, ConfigError } from '../src/config.ts';
import { addressAllowed, checkUrl, guardedAgents, OutboundRefused, outboundPolicy, parseAllowList } from '../src/outbound/policy.ts';

const none = outboundPolicy();
const loopback = outboundPolicy('127.0.0.0/8');

t.test('only global unicast is reachable by default', async (t) => {
  for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) t.ok(addressAllowed(a, none), `${a} allowed`);
  for (const a of [
    '127.0.0.1',
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '169.254.169.254', // cloud metadata
    '100.100.100.200', // carrier-grade NAT (Alibaba metadata)
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fd00:ec2::254', // AWS metadata over IPv6
    '::ffff:127.0.0.1', // IPv4-mapped loopback
    '::ffff:169.254.169.254',
    'not-an-ip',
  ]) {
    t.notOk(addressAllowed(a, none), `${a} refused`);
  }
});

t.test('an allow-list opens exactly its ranges', async (t) => {
  t.ok(addressAllowed('127.0.0.1', loopback));
  t.ok(addressAllowed('127.255.0.9', loopback));
  t.ok(addressAllowed('::ffff:127.0.0.1', loopback), 'mapped address judged as IPv4');
  t.notOk(addressAllowed('10.0.0.1', loopback));
  t.notOk(addressAllowed('::1', loopback), 'IPv6 loopback is another range');
  const two = outboundPolicy('10.1.0.0/16, fd00::/8 ,192.168.0.7');
  t.ok(addressAllowed('10.1.200.3', two));
  t.notOk(addressAllowed('10.2.0.1', two));
  t.ok(addressAllowed('fd12::1', two));
  t.ok(addressAllowed('192.168.0.7', two));
  t.notOk(addressAllowed('192.168.0.8', two));
  t.throws(() => parseAllowList('10.0.0.0/99'));
  t.throws(() => parseAllowList('example.com'));
});

t.test('configuration validates OUTBOUND_ALLOW_PRIVATE', async (t) => {
  t.same(loadConfig({}).outbound.allow, []);
  t.equal(loadConfig({ OUTBOUND_ALLOW_PRIVATE: '127.0.0.0/8' }).outbound.allow.length, 1);
  t.throws(() => loadConfig({ OUTBOUND_ALLOW_PRIVATE: 'intranet' }), ConfigError);
});

t.test('URLs: scheme, credentials and literal hosts', async (t) => {
  t.equal(checkUrl('https://example.com/a?b', none).hostname, 'example.com');
  for (const u of ['file:///etc/passwd', 'gopher://x', 'ftp://example.com/', 'javascript:alert(1)', 'nonsense', 'http://user:pw@example.com/']) {
    t.throws(() => checkUrl(u, none), OutboundRefused, u);
  }
  for (const u of ['http://127.0.0.1/', 'http://[::1]:8080/', 'http://169.254.169.254/latest/meta-data/', 'http://[::ffff:7f00:1]/', 'http://2130706433/', 'http://0x7f.1/']) {
    t.throws(() => checkUrl(u, none), OutboundRefused, u);
  }
  t.equal(checkUrl('http://127.0.0.1:1/', loopback).port, '1');
});

t.test('connections through the guarded agents go only where allowed', async (t) => {
  const server = http.createServer((_req, res) => res.end('reached'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.address() as AddressInfo).port;

  const get = (policy: ReturnType<typeof outboundPolicy>, host: string) =>
    new Promise<string>((resolve, reject) => {
      const agent = guardedAgents(policy).http;
      const req = http.get({ host, port, path: '/', agent }, (res) => {
        let body = '';
        res.on('data', (c) => (body += c));
        res.on('end', () => resolve(body));
      });
      req.on('error', reject);
    });

  // A name that resolves to loopback is refused without the allow-list and reached with it.
  const refused = await get(none, 'localhost').catch((e: unknown) => e);
  t.type(refused, OutboundRefused);
  t.equal((refused as OutboundRefused).code, 'EOUTBOUNDREFUSED');
  t.equal(await get(loopback, 'localhost'), 'reached');
});
