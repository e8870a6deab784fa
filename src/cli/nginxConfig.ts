/**
 * Prints the nginx.conf for several API processes and the media server:
 * `npm run -s nginx-config -- --listen HOST:PORT --api HOST:PORT,HOST:PORT,… --media-listen HOST:PORT --media HOST:PORT`
 * (see src/deploy/nginx.ts). Exits 2 with one line on bad arguments.
 */
import { parseArgs } from 'node:util';
import { nginxConfig } from '../deploy/nginx.ts';

const list = (v: string | undefined) => (v ?? '').split(',').map((s) => s.trim()).filter(Boolean);

try {
  const { values } = parseArgs({
    options: {
      listen: { type: 'string' },
      api: { type: 'string' },
      'media-listen': { type: 'string' },
      media: { type: 'string' },
    },
    strict: true,
    allowPositionals: false,
  });
  for (const k of ['listen', 'api', 'media-listen', 'media'] as const) if (!values[k]) throw new Error(`--${k} is required`);
  process.stdout.write(nginxConfig({ listen: values.listen!, api: list(values.api), mediaListen: values['media-listen']!, media: list(values.media) }));
} catch (err) {
  process.stderr.write(`nginx-config: ${(err as Error).message}\nusage: npm run -s nginx-config -- --listen HOST:PORT --api HOST:PORT,HOST:PORT,… --media-listen HOST:PORT --media HOST:PORT\n`);
  process.exitCode = 2;
}
