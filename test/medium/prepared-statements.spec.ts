import { DataSource, QueryFailedError } from 'typeorm';
import { preparedStatement, sqlRows } from '@dlock/persistence';
import { createDatabase } from '@dlock/testing';

// The statement cache every app's hot path runs on, against a real PostgreSQL.
describe('sqlRows on a manager', () => {
  let ds: DataSource;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: await createDatabase('prepared'), poolSize: 2 });
    await ds.initialize();
    await ds.query(`CREATE TABLE item (id int PRIMARY KEY, qty int NOT NULL CHECK (qty >= 0))`);
  });
  afterAll(async () => {
    await ds.destroy();
  });

  /** The names prepared on the connection of a transaction, read on that same connection. */
  async function preparedNames(manager = ds.manager): Promise<string[]> {
    const rows: { name: string }[] = await manager.query(`SELECT name FROM pg_prepared_statements`);
    return rows.map((r) => r.name);
  }

  it('answers the rows whatever the statement: INSERT, UPDATE and SELECT alike', async () => {
    const db = ds.manager;
    expect(await sqlRows(db, `INSERT INTO item VALUES ($1, $2) RETURNING id`, [1, 5])).toEqual([
      { id: 1 },
    ]);
    expect(
      await sqlRows(db, `UPDATE item SET qty = qty - $2 WHERE id = $1 RETURNING qty`, [1, 2]),
    ).toEqual([{ qty: 3 }]);
    expect(await sqlRows(db, `UPDATE item SET qty = 0 WHERE id = $1`, [99])).toEqual([]);
    expect(await sqlRows(db, `SELECT id, qty FROM item WHERE id = $1`, [1])).toEqual([
      { id: 1, qty: 3 },
    ]);
  });

  it('prepares each text once per connection, inside the manager’s own transaction', async () => {
    const sql = `SELECT qty FROM item WHERE id = $1`;
    await ds.transaction(async (manager) => {
      await sqlRows(manager, sql, [1]);
      await sqlRows(manager, sql, [1]);
      expect(await preparedNames(manager)).toContain(preparedStatement(sql).name);
    });
  });

  it('runs in the transaction: a rollback undoes its writes', async () => {
    await expect(
      ds.transaction(async (manager) => {
        await sqlRows(manager, `UPDATE item SET qty = 100 WHERE id = $1`, [1]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await ds.query(`SELECT qty FROM item WHERE id = 1`)).toEqual([{ qty: 3 }]);
  });

  it('fails with a QueryFailedError carrying the SQLSTATE, as TypeORM does', async () => {
    const failure = sqlRows(ds.manager, `UPDATE item SET qty = $2 WHERE id = $1`, [1, -1]);
    await expect(failure).rejects.toBeInstanceOf(QueryFailedError);
    await expect(failure).rejects.toMatchObject({ driverError: { code: '23514' } });
  });

  it('keeps working after a migration adds a column (statements name their columns)', async () => {
    const sql = `SELECT id, qty FROM item WHERE id = $1`;
    await ds.transaction(async (manager) => {
      await sqlRows(manager, sql, [1]);
      await manager.query(`ALTER TABLE item ADD COLUMN note text`);
      expect(await sqlRows(manager, sql, [1])).toEqual([{ id: 1, qty: 3 }]);
    });
  });

  it('names a text the same way everywhere and two texts differently', () => {
    expect(preparedStatement('SELECT 1').name).toBe(preparedStatement('SELECT 1').name);
    expect(preparedStatement('SELECT 1').name).not.toBe(preparedStatement('SELECT 2').name);
    expect(preparedStatement('SELECT $1::int', [7])).toMatchObject({ values: [7] });
  });
});
