// `npm start`: the whole service on the embedded defaults (all roles in one process), with a private
// redis-server when none answers at REDIS_URL.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ensureRedis } from './redis.mjs';

const dataDir = path.resolve(process.env.DATA_DIR || './data');
const redis = await ensureRedis(process.env.REDIS_URL || 'redis://127.0.0.1:6379', path.join(dataDir, 'redis'));
const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
  stdio: 'inherit',
  env: { ...process.env, REDIS_URL: redis.url, DATA_DIR: dataDir },
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
child.on('exit', async (code, signal) => {
  await redis.stop();
  process.exit(code ?? (signal ? 1 : 0));
});
