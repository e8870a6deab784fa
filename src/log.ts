/** Structured logging (pino). Tokens, passwords and session headers are redacted wherever they appear. */
import { pino, type Logger } from 'pino';

/** Creates the process logger. */
export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { pid: process.pid, ...bindings },
    redact: {
      paths: [
        'password',
        '*.password',
        'token',
        '*.token',
        'req.headers["x-session-token"]',
        'req.headers["x-bot-token"]',
        'req.headers.authorization',
        'req.headers.cookie',
      ],
      censor: '[redacted]',
    },
  });
}

export type { Logger };
