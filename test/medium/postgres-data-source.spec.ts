import {
  DatabaseNotConnectedError,
  poolOf,
  postgresDataSource,
  probeNewConnection,
  sqlRows,
} from '@dlock/persistence';
import { createDatabase } from '@dlock/testing';

// The one way dlock makes a DataSource (libs/persistence/src/pool.ts; CONTRIBUTING.md), on real
// PostgreSQL: the settings reach every session, the pool is reachable without TypeORM's internals
// only while connected, and a read-only view refuses writes in PostgreSQL itself.
describe('postgresDataSource', () => {
  let url: string;
  const settings = () => ({
    database: 'scratch',
    url,
    applicationName: 'dlock-data-source-test',
    poolMax: 3,
    connectTimeoutMs: 2_000,
    statementTimeoutMs: 1_234,
  });

  beforeAll(async () => {
    url = await createDatabase('datasource');
  });

  it('applies its settings to every session, and poolOf answers only while connected', async () => {
    const ds = postgresDataSource(settings());
    expect(() => poolOf(ds)).toThrow(DatabaseNotConnectedError);
    await ds.initialize();
    try {
      const pool = poolOf(ds);
      expect(pool.options.max).toBe(3);
      const [row] = (
        await pool.query(
          `SELECT current_setting('application_name') AS app, current_setting('statement_timeout') AS timeout`,
        )
      ).rows as { app: string; timeout: string }[];
      expect(row).toEqual({ app: 'dlock-data-source-test', timeout: '1234ms' });
      // A prepared statement outside a transaction runs on that same pool.
      expect(await sqlRows(ds.manager, 'SELECT $1::int + 1 AS n', [41])).toEqual([{ n: 42 }]);
      await probeNewConnection(ds, 2_000);
    } finally {
      await ds.destroy();
    }
    expect(() => poolOf(ds)).toThrow(DatabaseNotConnectedError);
    await expect(probeNewConnection(ds)).rejects.toBeInstanceOf(DatabaseNotConnectedError);
  });

  it('a read-only view refuses a write in PostgreSQL (25006)', async () => {
    const ds = postgresDataSource({ ...settings(), readOnly: true });
    await ds.initialize();
    try {
      await expect(ds.query('CREATE TABLE refused (id int)')).rejects.toMatchObject({
        driverError: { code: '25006' },
      });
      expect(await ds.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await ds.destroy();
    }
  });
});
