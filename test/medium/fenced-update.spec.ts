import { DataSource } from 'typeorm';
import {
  fencedUpdate,
  fencedUpdateStatement,
  raiseFenceFloor,
  TableFenceFloors,
} from '@dlock/persistence';
import { createDatabase } from '@dlock/testing';

// The one-statement fence of docs/extending.md against a real PostgreSQL.
describe('fencedUpdate', () => {
  let ds: DataSource;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: await createDatabase('fenced'), poolSize: 2 });
    await ds.initialize();
    await ds.query(
      `CREATE TABLE note (id text PRIMARY KEY, body text NOT NULL, fence bigint NOT NULL DEFAULT 0)`,
    );
    await ds.query(`INSERT INTO note (id, body) VALUES ('n-1', 'first'), ('n-2', 'second')`);
  });
  afterAll(async () => {
    await ds.destroy();
  });

  const row = async (id: string) =>
    (await ds.query(`SELECT id, body, fence FROM note WHERE id = $1`, [id]))[0];

  it('a higher token writes the row and its fence, and answers the returned columns', async () => {
    const result = await fencedUpdate(ds.manager, {
      table: 'note',
      id: 'n-1',
      token: 7n,
      set: { body: 'by 7' },
      returning: ['id', 'body', 'fence'],
    });
    expect(result).toEqual({ passed: true, row: { id: 'n-1', body: 'by 7', fence: '7' } });
    expect(await row('n-1')).toEqual({ id: 'n-1', body: 'by 7', fence: '7' });
  });

  it('the same token again, or an older one, is fenced: nothing changes', async () => {
    for (const token of [7n, 6n, 1n]) {
      const result = await fencedUpdate(ds.manager, {
        table: 'note',
        id: 'n-1',
        token,
        set: { body: `stale ${token}` },
      });
      expect(result).toEqual({ passed: false, row: undefined });
    }
    expect(await row('n-1')).toEqual({ id: 'n-1', body: 'by 7', fence: '7' });
  });

  it('tokens beyond 2^53 compare as bigints, not as floats', async () => {
    const big = 2n ** 53n + 1n;
    expect(
      (await fencedUpdate(ds.manager, { table: 'note', id: 'n-2', token: big, set: {} })).passed,
    ).toBe(true);
    expect(
      (await fencedUpdate(ds.manager, { table: 'note', id: 'n-2', token: big - 1n, set: {} }))
        .passed,
    ).toBe(false);
    expect((await row('n-2')).fence).toBe(big.toString());
  });

  it('the token that last wrote may write again only when it says so (the later steps of one grant)', async () => {
    const again = { table: 'note', id: 'n-1', token: 7n, set: { body: 'by 7, step 2' } };
    expect((await fencedUpdate(ds.manager, again)).passed).toBe(false);
    expect((await fencedUpdate(ds.manager, { ...again, acceptSameToken: true })).passed).toBe(true);
    expect(
      (await fencedUpdate(ds.manager, { ...again, token: 6n, acceptSameToken: true })).passed,
    ).toBe(false);
    expect(await row('n-1')).toEqual({ id: 'n-1', body: 'by 7, step 2', fence: '7' });
  });

  it('a `when` condition is checked in the same statement', async () => {
    const step = { table: 'note', id: 'n-1', token: 9n, set: { body: 'by 9' } };
    expect((await fencedUpdate(ds.manager, { ...step, when: { body: 'other' } })).passed).toBe(
      false,
    );
    expect(await row('n-1')).toEqual({ id: 'n-1', body: 'by 7, step 2', fence: '7' });
    expect(
      (await fencedUpdate(ds.manager, { ...step, when: { body: 'by 7, step 2' } })).passed,
    ).toBe(true);
    expect(await row('n-1')).toEqual({ id: 'n-1', body: 'by 9', fence: '9' });
  });

  it('an unknown row is not passed', async () => {
    expect(
      await fencedUpdate(ds.manager, { table: 'note', id: 'n-9', token: 99n, set: { body: 'x' } }),
    ).toEqual({ passed: false, row: undefined });
  });

  it('inside a transaction, a rollback undoes the write and its fence', async () => {
    await expect(
      ds.transaction(async (manager) => {
        await fencedUpdate(manager, { table: 'note', id: 'n-1', token: 50n, set: { body: 'tx' } });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await row('n-1')).toEqual({ id: 'n-1', body: 'by 9', fence: '9' });
  });

  it('a revocation floor raises the fence in one statement, never lowers it, and refuses the revoked token after', async () => {
    await ds.query(`INSERT INTO note (id, body) VALUES ('n-9', 'ninth')`);
    const revoked = 40n;
    expect(
      (await fencedUpdate(ds.manager, { table: 'note', id: 'n-9', token: revoked, set: {} }))
        .passed,
    ).toBe(true);
    const floors = new TableFenceFloors(ds.manager, { prefix: 'note:', table: 'note' });
    expect(await floors.raise('n-9', 42n)).toEqual({ result: 'raised', before: 40n, after: 42n });
    expect(await floors.raise('n-9', 41n)).toEqual({
      result: 'unchanged',
      before: 42n,
      after: 42n,
    });
    expect(await raiseFenceFloor(ds.manager, { table: 'note', id: 'n-404', floor: 42n })).toEqual({
      result: 'not_found',
      before: null,
      after: null,
    });
    // The revoked holder's later steps are refused too; the next grant's token exceeds the floor.
    const write = (token: bigint) =>
      fencedUpdate(ds.manager, { table: 'note', id: 'n-9', token, set: {}, acceptSameToken: true });
    expect((await write(revoked)).passed).toBe(false);
    expect((await write(43n)).passed).toBe(true);
  });

  it('names are identifiers only and values are parameters; the fence column is its own', () => {
    const base = { table: 'note', id: 'n-1', token: 8n, set: { body: "x'; DROP TABLE note; --" } };
    expect(fencedUpdateStatement(base)).toEqual({
      sql: 'UPDATE note SET body = $3, fence = $2::bigint WHERE id = $1 AND fence < $2::bigint RETURNING id',
      params: ['n-1', '8', "x'; DROP TABLE note; --"],
    });
    expect(
      fencedUpdateStatement({ ...base, when: { status: 'PENDING' }, acceptSameToken: true }),
    ).toEqual({
      sql: 'UPDATE note SET body = $3, fence = $2::bigint WHERE id = $1 AND fence <= $2::bigint AND status = $4 RETURNING id',
      params: ['n-1', '8', "x'; DROP TABLE note; --", 'PENDING'],
    });
    expect(() => fencedUpdateStatement({ ...base, table: 'note; DROP' })).toThrow(/identifier/);
    expect(() => fencedUpdateStatement({ ...base, when: { 'a OR 1=1': 1 } })).toThrow(/identifier/);
    expect(() => fencedUpdateStatement({ ...base, set: { 'body = 1 --': 1 } })).toThrow(
      /identifier/,
    );
    expect(() => fencedUpdateStatement({ ...base, set: { fence: 1 } })).toThrow(/fence column/);
    expect(() => fencedUpdateStatement({ ...base, token: 0n })).toThrow(/positive/);
  });
});
