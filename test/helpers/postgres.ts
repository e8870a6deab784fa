/**
 * A private PostgreSQL database per test file (127.0.0.1:5432, user postgres, trust auth; override with
 * POSTGRES_TEST_URL). `testDatabase(t)` creates a uniquely named database and drops it in the teardown.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Test } from 'tap';

export const POSTGRES_ADMIN_URL = process.env.POSTGRES_TEST_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Creates a fresh database and returns its URL; dropped (connections and all) when `t` ends. */
export async function testDatabase(t: Test, label = 'test'): Promise<string> {
  const name = `stoat_${label.replace(/[^a-z0-9_]/g, '_')}_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  t.teardown(() => dropDatabase(name));
  const u = new URL(POSTGRES_ADMIN_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

async function dropDatabase(name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}
