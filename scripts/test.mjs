// `npm test`: type-checks, then runs the tap suite against the Redis at REDIS_URL (a private
// redis-server when none answers). `--reliability` runs the reliability suite instead.
// Extra arguments go to tap (e.g. `npm test -- test/servers.test.ts`).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureRedis } from './redis.mjs';

const args = process.argv.slice(2);
const reliability = args.includes('--reliability');
const tapArgs = args.filter((a) => a !== '--reliability');

const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'tsconfig.json'], {
  stdio: 'inherit',
});
if (tsc.status !== 0) {
  console.log('type check failed');
  console.log('0 passed, 1 failed');
  process.exit(1);
}

const redis = await ensureRedis(process.env.REDIS_URL || 'redis://127.0.0.1:6379', path.join(os.tmpdir(), `stoat-test-redis-${process.pid}`));
// The reliability files are excluded from the default run (.taprc) but run when named explicitly.
const reliabilityFiles = () =>
  fs.readdirSync('test/reliability').filter((f) => f.endsWith('.test.ts')).map((f) => path.join('test/reliability', f));
const files = tapArgs.length ? tapArgs : reliability ? reliabilityFiles() : [];
const extra = reliability ? ['--jobs=1', '--timeout=900'] : [];
const child = spawn(process.execPath, ['node_modules/tap/dist/esm/run.mjs', ...extra, ...files], {
  stdio: 'inherit',
  env: { ...process.env, REDIS_URL: redis.url, TEST_REDIS_URL: redis.url },
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
child.on('exit', async (code) => {
  await redis.stop();
  process.exit(code ?? 1);
});
