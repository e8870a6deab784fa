/**
 * Policy changes (issue 38, Stoat's PolicyChange): the operator's list in the POLICY_CHANGES file (appended to
 * by `npm run accounts -- policy add`), shown in Ready's `policy_changes` — only the changes created after the
 * user's account, or after their last acknowledgement — until `POST /policy/acknowledge`, driven through
 * stoat.js (its `policyChanges` event hands over the changes and the acknowledge call).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'stoat.js';
import t from 'tap';
import { ConfigError, loadConfig } from '../src/config.ts';
import { runPolicy } from '../src/cli/accountsPolicy.ts';
import { runCli } from './helpers/cli.ts';
import { client } from './helpers/http.ts';
import { clearClientIntervalsAtTeardown, connectAgain, installWebSocket, signUpWithClient } from './helpers/realClients.ts';
import { startTestService, tempDir } from './helpers/service.ts';
import { connectReady } from './helpers/ws.ts';

installWebSocket();

const OLD = { created_time: '2020-01-01T00:00:00.000Z', effective_time: '2020-02-01T00:00:00.000Z', description: 'An old change', url: 'https://example.test/old' };

t.test('configuration and the operator command', async (t) => {
  const dir = tempDir(t, 'policy');
  const file = path.join(dir, 'policy.json');
  t.equal(loadConfig({ DATA_DIR: dir, POLICY_CHANGES: file }).policyChangesFile, file, 'a file not there yet is an empty list');
  fs.writeFileSync(file, '{"not": "a list"}');
  t.throws(() => loadConfig({ DATA_DIR: dir, POLICY_CHANGES: file }), ConfigError, 'not an array');
  fs.writeFileSync(file, JSON.stringify([{ ...OLD, url: 'not a url' }]));
  t.throws(() => loadConfig({ DATA_DIR: dir, POLICY_CHANGES: file }), ConfigError, 'a bad url');
  fs.writeFileSync(file, JSON.stringify([OLD]));
  const errors: string[] = [];
  t.equal(runPolicy(['add', '--description', 'x', '--url', 'nope'], file, { error: (l) => errors.push(l) }), 1, 'a bad url is refused');
  t.equal(runPolicy(['add', '--description', 'x'], file, { error: (l) => errors.push(l) }), 2, 'the url is required');
  t.equal(runPolicy(['add', '--description', 'x', '--url', 'https://example.test/x'], undefined, { error: (l) => errors.push(l) }), 2, 'POLICY_CHANGES must be set');
  t.same(JSON.parse(fs.readFileSync(file, 'utf8')), [OLD], 'refused additions left the file as it was');
});

t.test('Ready shows new changes until acknowledged (stoat.js)', async (t) => {
  clearClientIntervalsAtTeardown(t);
  const dir = tempDir(t, 'policy');
  const file = path.join(dir, 'policy.json');
  fs.writeFileSync(file, JSON.stringify([OLD]));
  const s = await startTestService(t, { RATE_LIMITS: 'off', POLICY_CHANGES: file });
  const alice = await signUpWithClient(t, Client as never, 'stoat.js', s.apiUrl, `policyalice${process.pid}`);
  const token = alice.testSession.token as string;
  t.same((await connectReady(s, token)).frames.find((f) => f.type === 'Ready')!.policy_changes, [], 'a change older than the account is not shown');

  // The operator adds one with the real command (a separate process, as an operator runs it).
  const run = await runCli({ POLICY_CHANGES: file, DATA_DIR: s.dataDir, REDIS_URL: s.config.redisUrl, REDIS_PREFIX: s.prefix }, ['policy', 'add', '--description', 'New terms', '--url', 'https://example.test/terms', '--effective', '2030-01-01T00:00:00Z'], { script: 'src/cli/accounts.ts' });
  t.equal(run.code, 0, run.err);
  const added = JSON.parse(fs.readFileSync(file, 'utf8'));
  t.equal(added.length, 2);

  let shown: unknown[] = [];
  let acknowledge: (() => Promise<void>) | undefined;
  await connectAgain(t, Client as never, s.apiUrl, alice, (c) =>
    c.once('policyChanges', (changes: unknown[], ack: () => Promise<void>) => {
      shown = changes;
      acknowledge = ack;
    }),
  );
  t.same(shown, [added[1]], 'stoat.js is handed the new change only');
  t.ok(acknowledge, 'and the acknowledge call');
  await acknowledge!();
  t.same((await connectReady(s, token)).frames.find((f) => f.type === 'Ready')!.policy_changes, [], 'acknowledged: gone');

  // A later change shows again, alone.
  const later = { created_time: new Date(Date.now() + 1000).toISOString(), effective_time: '2031-01-01T00:00:00.000Z', description: 'Later', url: 'https://example.test/later' };
  fs.writeFileSync(file, JSON.stringify([...added, later]));
  t.same((await connectReady(s, token)).frames.find((f) => f.type === 'Ready')!.policy_changes, [later], 'the file is read again when it changes');
  t.equal((await client(s, token).post('/policy/acknowledge')).status, 204);
  t.same((await connectReady(s, token)).frames.find((f) => f.type === 'Ready')!.policy_changes, []);
  t.equal((await client(s, token).post('/policy/acknowledge')).status, 204, 'acknowledging again is fine');
  t.equal((await client(s).post('/policy/acknowledge')).status, 401, 'a session is needed');
});
