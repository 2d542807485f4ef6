import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { MIGRATIONS, type DatabaseName } from '../../../../migrations';
import { startEmbeddedPostgres } from '@dlock/testing';
import { createMigratedDatabase as createAndMigrate } from '@dlock/persistence';
import { Client } from 'pg';

/**
 * Where the harness's databases live. The CLI runs its own embedded
 * PostgreSQL (and can restart it, UC-07); under jest the run's shared server
 * (DLOCK_TEST_PG_URL) is used and cannot be restarted.
 */
export interface PgServer {
  readonly adminUrl: string;
  readonly canRestart: boolean;
  /** Stops and starts the server on the same port and data (UC-07). */
  restart(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

export async function createMigratedDatabase(
  server: PgServer,
  db: DatabaseName,
  prefix: string,
): Promise<string> {
  const name = `${prefix}_${db}_${randomBytes(3).toString('hex')}`.toLowerCase();
  return createAndMigrate(server.adminUrl, name.replace(/[^a-z0-9_]/g, '_'), MIGRATIONS[db]);
}

/** The jest run's shared server. */
export function externalPg(adminUrl: string): PgServer {
  return {
    adminUrl,
    canRestart: false,
    restart: () => Promise.reject(new Error('the shared test PostgreSQL cannot be restarted')),
    stop: async () => undefined,
  };
}

/** The CLI's own PostgreSQL: fresh data dir, removed on stop. */
export async function startEmbeddedPg(workDir: string): Promise<PgServer> {
  const pg = await startEmbeddedPostgres({ dir: path.join(workDir, 'pg') });
  return { adminUrl: pg.adminUrl, canRestart: true, restart: pg.restart, stop: pg.stop };
}

/** One short-lived client for the checkers and fixtures. */
export async function withPg<T>(url: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  // A server that goes away mid-use (a soak's postgres-restart) fails the query in flight; without
  // a listener the client's 'error' event would also end the whole harness process.
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}
