import { createHash, randomBytes } from 'node:crypto';
import { Client } from 'pg';
import type { DatabaseName } from '../../../migrations';

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
  // Loaded here, not at the top: TypeORM and the migrations are hundreds of modules, and most
  // test files that load this one never run a migration (they copy a template, migratedDatabase).
  const [{ migrateDatabase }, { MIGRATIONS }] = await Promise.all([
    import('../../persistence/src/migrate'),
    import('../../../migrations'),
  ]);
  await migrateDatabase(url, MIGRATIONS[db]);
}

/** A database's URL on the run's server. */
function databaseUrl(name: string): string {
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * The template of one database kind: its real migrations run once per test
 * run (and per migration source, so an edited migration gets a new template),
 * not once per test file. Built under a scratch name and renamed when
 * complete, under an advisory lock, so concurrent workers neither build it
 * twice nor copy a half-migrated one.
 */
async function migratedTemplate(admin: Client, db: DatabaseName): Promise<string> {
  // Loaded here, not at the top (migrate says why); naming the template needs no TypeORM.
  const { MIGRATIONS } = await import('../../../migrations');
  const source = MIGRATIONS[db].map((m) => m.toString()).join('\n');
  const name = `tpl_${db}_${createHash('sha256').update(source).digest('hex').slice(0, 12)}`;
  const found = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  if (found.rowCount === 1) return name;
  const scratch = `${name}_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE "${scratch}"`);
  await migrate(databaseUrl(scratch), db);
  await admin.query(`ALTER DATABASE "${scratch}" RENAME TO "${name}"`);
  return name;
}

/** Database-level grants (CONNECT for the reader role) are not copied with a template. */
async function copyDatabaseGrants(admin: Client, from: string, to: string): Promise<void> {
  const acl = await admin.query<{ grantee: string; privilege: string }>(
    `SELECT a.grantee::regrole::text AS grantee, a.privilege_type AS privilege
       FROM pg_database d, aclexplode(d.datacl) a
      WHERE d.datname = $1 AND a.grantee <> 0 AND a.grantee <> d.datdba`,
    [from],
  );
  for (const g of acl.rows)
    await admin.query(`GRANT ${g.privilege} ON DATABASE "${to}" TO ${g.grantee}`);
}

/**
 * A fresh, migrated database: a copy of the kind's template, migrated by the
 * real migrations exactly as `npm run db:migrate` does (migratedTemplate).
 */
export async function migratedDatabase(db: DatabaseName): Promise<string> {
  const name = `${db}_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    // One builder or copier at a time: a template being copied may have no other session.
    await admin.query('SELECT pg_advisory_lock(hashtext($1))', ['dlock-test-templates']);
    const template = await migratedTemplate(admin, db);
    await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
    await copyDatabaseGrants(admin, template, name);
  } finally {
    await admin.end();
  }
  return databaseUrl(name);
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
