import { Client } from 'pg';
import { DataSource, type MixedList } from 'typeorm';

/** A database's migration classes, as migrations/index.ts lists them. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export type MigrationList = MixedList<Function>;

/**
 * Runs `migrations` on the database at `url`, each in its own transaction, and returns the names
 * of those applied: the one way `npm run db:migrate`, the harness, the tests and the benches
 * migrate a database, so none of them migrates differently from production.
 */
export async function migrateDatabase(url: string, migrations: MigrationList): Promise<string[]> {
  const ds = new DataSource({ type: 'postgres', url, migrations, logging: ['error'] });
  await ds.initialize();
  try {
    return (await ds.runMigrations({ transaction: 'each' })).map((m) => m.name);
  } finally {
    await ds.destroy();
  }
}

const DATABASE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Creates the database `name` (lowercase letters, digits and `_`: it is spliced into the
 * statement) on the server `adminUrl` reaches, migrates it, and returns its URL.
 */
export async function createMigratedDatabase(
  adminUrl: string,
  name: string,
  migrations: MigrationList,
): Promise<string> {
  if (!DATABASE_NAME.test(name)) throw new Error(`not a database name: ${JSON.stringify(name)}`);
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  await migrateDatabase(url.toString(), migrations);
  return url.toString();
}
