/**
 * `GET /metrics` on its own port (`METRICS_PORT`, listening on `METRICS_HOST`, default 127.0.0.1). Not
 * started when `METRICS_PORT` is unset, so metrics are never public by accident. Anything but
 * `GET /metrics` answers 404 (JSON, like the rest of the service).
 */
import http from 'node:http';
import type { Logger } from '../log.ts';
import { registry, startDefaultMetrics } from './registry.ts';

/** Starts the metrics listener; resolves with the server once it listens. */
export function startMetricsServer(port: number, host: string, log: Logger): Promise<http.Server> {
  startDefaultMetrics();
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if ((req.method === 'GET' || req.method === 'HEAD') && path === '/metrics') {
      registry
        .metrics()
        .then((body) => {
          res.writeHead(200, { 'Content-Type': registry.contentType });
          res.end(req.method === 'HEAD' ? undefined : body);
        })
        .catch((err: unknown) => {
          log.warn({ err }, 'metrics collection failed');
          res.writeHead(500, { 'Content-Type': 'application/json' });
          res.end(JSON.stringify({ type: 'InternalError' }));
        });
      return;
    }
    res.writeHead(404, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ type: 'NotFound' }));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}
