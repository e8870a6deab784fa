/** A real SMTP server for tests (smtp-server on loopback): it records every mail it accepts. */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { until, WAIT_MS } from './wait.ts';

/** One received mail, decoded enough to read it. */
export interface ReceivedMail {
  to: string[];
  subject: string;
  /** The decoded message (quoted-printable soft breaks and escapes undone). */
  body: string;
  raw: string;
}

/** A running SMTP server. */
export interface TestSmtp {
  port: number;
  mails: ReceivedMail[];
  /** The first mail (from index `from`) to `to`; rejects after the timeout. */
  waitFor(to: string, from?: number, timeoutMs?: number): Promise<ReceivedMail>;
  /** The token of the first link to `path` (e.g. `/login/verify/`) in a mail. */
  close(): Promise<void>;
}

function decodeQp(s: string): string {
  return s.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/** Starts a server that accepts mail from `user`/`pass` (plain AUTH on loopback) on `port` (0 = any). */
export async function startSmtp(o: { port?: number; user?: string; pass?: string } = {}): Promise<TestSmtp> {
  const mails: ReceivedMail[] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    allowInsecureAuth: true,
    authOptional: !o.user,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === o.user && auth.password === o.pass) cb(null, { user: auth.username });
      else cb(new Error('bad credentials'));
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = chunks.map((c) => c.toString('utf8')).join('');
        const subject = /^Subject: (.*)$/m.exec(raw)?.[1]?.trim() ?? '';
        mails.push({ to: session.envelope.rcptTo.map((r) => r.address), subject, body: decodeQp(raw), raw });
        cb();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    mails,
    waitFor: (to, from = 0, timeoutMs = WAIT_MS) => until(`a mail to ${to}`, () => mails.slice(from).find((m) => m.to.includes(to)), timeoutMs),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The token at the end of the first link to `path` in a mail. */
export function linkToken(mail: ReceivedMail, path: string): string {
  const m = new RegExp(`${path.replace(/\//g, '\\/')}([A-Za-z0-9._~%-]+)`).exec(mail.body);
  if (!m) throw new Error(`no ${path} link in the mail`);
  return decodeURIComponent(m[1]!);
}
