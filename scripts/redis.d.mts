export function ping(host: string, port: number, timeoutMs?: number): Promise<boolean>;
export function haveRedisServer(): boolean;
export const INSTALL_HINT: string;
export function startPrivateRedis(o?: { dir?: string; port?: number; persist?: boolean }): Promise<{ url: string; port: number; dir: string; child: import('node:child_process').ChildProcess; stop(): Promise<void> }>;
export function ensureRedis(url: string, dir?: string): Promise<{ url: string; stop(): Promise<void>; private: boolean }>;
