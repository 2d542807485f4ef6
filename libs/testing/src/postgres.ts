import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { MIGRATIONS, type DatabaseName } from '../../../migrations';

/** The admin URL of the run's embedded PostgreSQL (test/global-setup.mjs). */
export function adminUrl(): string {
  const url = process.env.DLOCK_TEST_PG_URL;
  if (!url)
    throw new Error(
      'DLOCK_TEST_PG_URL is not set: run tests through jest (global setup starts PostgreSQL)',
    );
  return url;
}

/**
 * The reconciler's read-only role (migrations/reconciler-reader.ts). Its migrations make it
 * NOLOGIN and give it SELECT only; the test run lets it log in with this password once, in
 * test/global-setup.mjs, as each environment does its own way (docs/operations.md, "The
 * reconciler's read-only role").
 */
export const RECONCILER_READER = { name: 'reconciler_ro', password: 'reconciler-ro' } as const;

/** A database's URL as the reconciler's read-only role. */
export function readerUrl(url: string): string {
  const reader = new URL(url);
  reader.username = RECONCILER_READER.name;
  reader.password = RECONCILER_READER.password;
  return reader.toString();
}

/** Creates a fresh, empty database and returns its URL. */
export async function createDatabase(prefix: string): Promise<string> {
  const name = `${prefix.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${randomBytes(4).toString('hex')}`;
  const client = new Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs the real migrations of one database, exactly as `npm run db:migrate` does. */
export async function migrate(url: string, db: DatabaseName): Promise<void> {
  const ds = new DataSource({
    type: 'postgres',
    url,
    migrations: MIGRATIONS[db],
    migrationsRun: false,
    logging: false,
  });
  await ds.initialize();
  try {
    await ds.runMigrations({ transaction: 'each' });
  } finally {
    await ds.destroy();
  }
}

/** A fresh, migrated database. */
export async function migratedDatabase(db: DatabaseName): Promise<string> {
  const url = await createDatabase(db);
  await migrate(url, db);
  return url;
}

/** A short-lived pg client for assertions straight against the database. */
export async function withClient<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * Runs one statement as the table's owner with every trigger of the table
 * off (guards, seals, deferred checks), then puts each back as it was (ALWAYS
 * or not): how an intruder with the owner's rights would go around them.
 */
export async function withTriggersOff(
  c: Client,
  table: string,
  sql: string,
  params: unknown[] = [],
): Promise<void> {
  const triggers = await c.query<{ name: string; always: boolean }>(
    `SELECT tgname AS name, tgenabled = 'A' AS always FROM pg_trigger
      WHERE tgrelid = $1::regclass AND NOT tgisinternal`,
    [table],
  );
  await c.query('BEGIN');
  try {
    await c.query(`ALTER TABLE ${table} DISABLE TRIGGER USER`);
    await c.query(sql, params);
    for (const t of triggers.rows) {
      await c.query(`ALTER TABLE ${table} ENABLE ${t.always ? 'ALWAYS ' : ''}TRIGGER ${t.name}`);
    }
    await c.query('COMMIT');
  } catch (err) {
    await c.query('ROLLBACK');
    throw err;
  }
}

/**
 * The rows of those `tables` that exist in one database, as text, so a test
 * can show a refused request left everything as it was.
 */
export async function tableSnapshot(url: string, tables: readonly string[]): Promise<string> {
  return withClient(url, async (c) => {
    const parts: string[] = [];
    for (const table of tables) {
      const exists = await c.query('SELECT to_regclass($1) AS t', [table]);
      if (!exists.rows[0].t) continue;
      const rows = await c.query(`SELECT * FROM ${table} ORDER BY 1`);
      parts.push(`${table}:${JSON.stringify(rows.rows)}`);
    }
    return parts.join('\n');
  });
}
