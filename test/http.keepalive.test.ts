// Idle keep-alive connections stay open a minute (Node's default is 5 s): a client that reuses a connection
// at the moment the server closes it gets ECONNRESET, which fetch on a loaded machine hit (issue 40).
import http from 'node:http';
import t from 'tap';
import { startTestService } from './helpers/service.ts';

/** One GET on a keep-alive agent: the status, the Keep-Alive header, and whether the socket is reused next. */
function get(url: string, agent: http.Agent): Promise<{ status: number; keepAlive: string; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, keepAlive: String(res.headers['keep-alive']), reused: req.reusedSocket }));
    });
    req.on('error', reject);
  });
}

t.test('the API and media servers keep an idle connection 65 s', async (t) => {
  const s = await startTestService(t, { RATE_LIMITS: 'off' });
  for (const [name, base] of [['API', s.apiUrl], ['media', s.mediaUrl]] as const) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    t.teardown(() => agent.destroy());
    const first = await get(`${base}/`, agent);
    t.equal(first.keepAlive, 'timeout=65', `${name}: the server announces 65 s`);
    const second = await get(`${base}/`, agent);
    t.equal(second.status, first.status);
    t.ok(second.reused, `${name}: the next request reuses the connection`);
  }
});
