import { Module, type DynamicModule, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { DataSource } from 'typeorm';
import {
  DatabaseModule,
  DatabaseNotConnectedError,
  connected,
  sqlRows,
  type DatabaseConnect,
} from '@dlock/persistence';
import { createDatabase, freePort } from '@dlock/testing';

// The one way an app wires a database (DatabaseModule, CONTRIBUTING.md), on real PostgreSQL:
// the options the apps rely on — a token of their own, an optional database, connecting at
// start (in the background when it is down) or when first used — and closing at shutdown.
describe('DatabaseModule', () => {
  let url: string;
  /** A URL nothing listens on: every connection attempt is refused. */
  let deadUrl: string;
  const PAYDB = Symbol('paydb');
  const settings = (at: string, readOnly = false) => ({
    database: 'scratch',
    url: at,
    applicationName: 'dlock-database-module-test',
    poolMax: 2,
    connectTimeoutMs: 1_000,
    statementTimeoutMs: 2_000,
    readOnly,
  });

  beforeAll(async () => {
    url = await createDatabase('dbmodule');
    const u = new URL(url);
    u.port = String(await freePort());
    deadUrl = u.toString();
  });

  async function boot(database: DynamicModule): Promise<INestApplicationContext> {
    @Module({ imports: [database] })
    class Root {}
    return NestFactory.createApplicationContext(Root, { logger: false });
  }

  it('at start: connected before the app is up, closed at shutdown', async () => {
    const app = await boot(DatabaseModule.forRootAsync({ useFactory: () => settings(url) }));
    const ds = app.get(DataSource);
    expect(ds.isInitialized).toBe(true);
    expect(await sqlRows(ds, 'SELECT $1::int + 1 AS n', [41])).toEqual([{ n: 42 }]);
    await app.close();
    expect(ds.isInitialized).toBe(false);
    await expect(sqlRows(ds, 'SELECT 1')).rejects.toBeInstanceOf(DatabaseNotConnectedError);
  });

  it('at start with the database down: the app is up unconnected, and shutdown stops the retries', async () => {
    const app = await boot(DatabaseModule.forRootAsync({ useFactory: () => settings(deadUrl) }));
    const ds = app.get(DataSource);
    expect(ds.isInitialized).toBe(false);
    await expect(sqlRows(ds, 'SELECT 1')).rejects.toMatchObject({ code: '08001' });
    await app.close();
    await expect(connected(ds)).rejects.toBeInstanceOf(DatabaseNotConnectedError);
  });

  it.each<[DatabaseConnect, boolean]>([
    ['when-used', false],
    ['at-start', true],
  ])(
    'connect %s under its own token: connected at boot = %s, read-only sessions',
    async (connect, atBoot) => {
      const app = await boot(
        DatabaseModule.forRootAsync({
          token: PAYDB,
          connect,
          useFactory: () => settings(url, true),
        }),
      );
      const ds = app.get<DataSource>(PAYDB);
      expect(ds.isInitialized).toBe(atBoot);
      await expect(sqlRows(await connected(ds), 'CREATE TABLE refused (id int)')).rejects.toThrow(
        /read-only transaction/,
      );
      expect(await sqlRows(ds, 'SELECT 1 AS one', [], { prepared: false })).toEqual([{ one: 1 }]);
      await app.close();
      expect(ds.isInitialized).toBe(false);
    },
  );

  it('when used with the database down: each caller tries again, none leaves a pool behind', async () => {
    const app = await boot(
      DatabaseModule.forRootAsync({
        token: PAYDB,
        connect: 'when-used',
        useFactory: () => settings(deadUrl),
      }),
    );
    const ds = app.get<DataSource>(PAYDB);
    for (let i = 0; i < 3; i++) {
      await expect(connected(ds)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      expect(ds.isInitialized).toBe(false);
    }
    await app.close();
  });

  it('a database that is not configured is null, and closes as nothing', async () => {
    const app = await boot(
      DatabaseModule.forRootAsync({ token: PAYDB, connect: 'when-used', useFactory: () => null }),
    );
    expect(app.get(PAYDB)).toBeNull();
    await app.close();
  });
});
