import { randomBytes } from 'node:crypto';
import { RECONCILER_READER, adminUrl, migrate, readerUrl, withClient } from '@dlock/testing';
import type { DatabaseName } from '../../migrations';

/**
 * The reconciler's read-only role as compose and the k8s `local` overlay set it
 * up (docs/operations.md, "The reconciler's read-only role"): the instance's
 * first-boot script made `reconciler_ro` with LOGIN, and each database's
 * migrations run as that database's owner, a role that may not create roles.
 * The migration's grants must still let the reader read every table, the
 * tables later migrations add too, and write none.
 */
jest.setTimeout(60_000);

/** Like init-app-dbs.sh: an owner role without CREATEROLE, and its database closed to PUBLIC. */
async function ownedDatabase(db: DatabaseName): Promise<{ owner: string; url: string }> {
  const suffix = randomBytes(4).toString('hex');
  const owner = `${db}_owner_${suffix}`;
  const name = `${db}_owned_${suffix}`;
  await withClient(adminUrl(), async (c) => {
    await c.query(`CREATE ROLE ${owner} LOGIN PASSWORD 'owner'`);
    await c.query(`CREATE DATABASE ${name} OWNER ${owner}`);
    await c.query(`REVOKE ALL ON DATABASE ${name} FROM PUBLIC`);
  });
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  url.username = owner;
  url.password = 'owner';
  return { owner, url: url.toString() };
}

const TABLES: Record<DatabaseName, string[]> = {
  lockdb: ['lock_session', 'lock_entry', 'lock_revocation', 'lock_revocation_request'],
  paydb: ['account', 'payout', 'ledger_entry', 'payout_transition'],
  proxydb: ['rail_submission', 'rail_high_water'],
};

describe.each(['lockdb', 'paydb', 'proxydb'] as const)(
  '%s migrated by its owner: reconciler_ro reads and cannot write',
  (db) => {
    it('reads every table, also one a later migration adds, and writes none', async () => {
      const { url } = await ownedDatabase(db);
      await migrate(url, db);
      await withClient(url, (c) => c.query(`CREATE TABLE added_later (x int)`));
      const reader = readerUrl(url);
      const reads = await withClient(reader, async (c) => {
        const counted: string[] = [];
        for (const table of [...TABLES[db], 'added_later']) {
          await c.query(`SELECT count(*) FROM ${table}`);
          counted.push(table);
        }
        return counted;
      });
      const write = await withClient(reader, async (c) => {
        await c.query('SET default_transaction_read_only = off');
        return c.query(`INSERT INTO added_later VALUES (1)`).then(
          () => 'written',
          (err: Error) => err.message,
        );
      });
      expect({ reads, write, reader: RECONCILER_READER.name }).toEqual({
        reads: [...TABLES[db], 'added_later'],
        write: 'permission denied for table added_later',
        reader: 'reconciler_ro',
      });
    });
  },
);
