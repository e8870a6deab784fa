/**
 * `previews`: link previews generated per second (the worker's path without the cache: guarded fetch with
 * its per-hop checks, head tokenising, OpenGraph/Twitter extraction, specials) at 8 in flight, against a local
 * page server of realistic pages (~40 KB: a head of metas and links, then a long body that is never read);
 * the ceiling is a raw `http.get` of the same pages, read whole, at the same concurrency in the same run.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Redis } from 'ioredis';
import { outboundPolicy } from '../src/outbound/policy.ts';
import { generateEmbed, type PreviewContext } from '../src/previews/generate.ts';
import { median, repeat, type Bench } from './lib.ts';

const PAGE =
  '<!doctype html><html><head><title>Bench</title>' +
  '<meta property="og:title" content="A page to preview"><meta property="og:description" content="Its description, of a usual length for a card.">' +
  '<meta property="og:site_name" content="Bench"><meta name="theme-color" content="#336699"><link rel="icon" href="/favicon.ico">' +
  '<meta property="og:image" content="/img.png"><meta property="og:image:width" content="1200"><meta property="og:image:height" content="630">' +
  '<script>' + 'var x = 1;'.repeat(1000) + '</script></head><body>' + '<div><p>text</p></div>'.repeat(1500) + '</body></html>';

/** Runs `fn` for `seconds` with `concurrency` in flight; returns completions per second. */
async function throughput(seconds: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<number> {
  const end = Date.now() + seconds * 1000;
  let done = 0;
  let next = 0;
  const t0 = Date.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        await fn(next++);
        done++;
      }
    }),
  );
  return done / ((Date.now() - t0) / 1000);
}

const bench: Bench = {
  name: 'previews',
  description: 'link previews generated/s (guarded fetch + head parse, no cache) vs raw http.get of the same pages',
  async run(ctx) {
    const server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE));
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const redis = new Redis(ctx.redisUrl);
    const pctx: PreviewContext = {
      policy: outboundPolicy('127.0.0.0/8'),
      limits: { timeoutMs: 10_000, maxBytes: 1_000_000, maxRedirects: 5, cacheTtlSeconds: 60, cacheMax: 1000, concurrency: 8, attempts: 1, jobLockMs: 30_000 },
      redis,
      prefix: 'bench:previews:',
    };
    const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    const raw = (i: number) =>
      new Promise<void>((resolve, reject) => {
        http
          .get(`${base}/p/${i}`, { agent }, (res) => {
            res.on('data', () => {});
            res.on('end', resolve);
            res.on('error', reject);
          })
          .on('error', reject);
      });
    const preview = async (i: number) => {
      const e = await generateEmbed(`${base}/p/${i}?x`, pctx);
      if (!e || e.type !== 'Website' || e.title !== 'A page to preview') throw new Error('bench page gave no preview');
    };
    try {
      const seconds = ctx.quick ? 3 : 6;
      // The image has its size in the page: no second fetch, as for most real cards.
      await throughput(1, 8, preview);
      await throughput(1, 8, raw);
      const runs = await repeat(ctx.repeats, async () => ({ previews: await throughput(seconds, 8, preview), raw: await throughput(seconds, 8, raw) }));
      const rate = median(runs.map((r) => r.previews));
      const ceiling = median(runs.map((r) => r.raw));
      ctx.log(`previews: ${runs.map((r) => Math.round(r.previews)).join(', ')}/s; raw fetch: ${runs.map((r) => Math.round(r.raw)).join(', ')}/s`);
      return [
        {
          name: 'previews',
          figure: 'link previews/s, 8 in flight, no cache',
          median: rate,
          unit: 'previews/s',
          ceiling,
          ceilingLabel: 'raw http.get of the same ~40 KB pages, same run',
          ratio: rate / ceiling,
          notes: `page ${PAGE.length} bytes; each preview is one guarded fetch (policy check, guarded lookup) cut at </head> by the tokenizer`,
        },
      ];
    } finally {
      agent.destroy();
      redis.disconnect();
      server.closeAllConnections();
      server.close();
    }
  },
};
export default bench;
