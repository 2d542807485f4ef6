import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Client } from 'pg';
import { DataSource } from 'typeorm';
import { railClientRef } from '@dlock/payout-contract';
import {
  REPO_ROOT,
  createDatabase,
  migratedDatabase,
  seedFundedAccount,
  seedPendingPayout,
  withClient,
  runNode,
  type NodeRun,
} from '@dlock/testing';
import { MIGRATIONS, type DatabaseName } from '../../migrations';

/**
 * The records of money and locks are never removed, and no down migration
 * rewinds a token source or a guard's memory (docs/operations.md, "Revert a
 * migration"). Real PostgreSQL, migrated by the real TypeORM CLI from `dist/`
 * (run `node scripts/build.js` first); each refused revert is the CLI's too, the
 * reverts that only lead up to one run in process.
 */
const TYPEORM = path.join(REPO_ROOT, 'node_modules', '.bin', 'typeorm');
const URL_VAR: Record<DatabaseName, string> = {
  lockdb: 'LOCKDB_URL',
  paydb: 'PAYDB_URL',
  proxydb: 'PROXYDB_URL',
};

function typeorm(
  command: 'migration:run' | 'migration:revert',
  db: DatabaseName,
  url: string,
  env: Record<string, string> = {},
): Promise<NodeRun> {
  const dataSource = path.join(REPO_ROOT, 'dist', 'migrations', db, 'data-source.js');
  return runNode(TYPEORM, [command, '-d', dataSource], { [URL_VAR[db]]: url, ...env });
}

/**
 * Migrated by the CLI, as an operator does: the first test checks what it applied. The
 * other tests start from migratedDatabase (the same migrations, run once per test run)
 * and revert through the CLI.
 */
async function cliMigrated(db: DatabaseName): Promise<string> {
  const url = await createDatabase(`${db}_cli`);
  const run = await typeorm('migration:run', db, url);
  expect({ code: run.code, out: run.out }).toEqual({ code: 0, out: expect.any(String) });
  return url;
}

async function applied(url: string): Promise<string[]> {
  return withClient(url, async (c) => {
    const res = await c.query<{ name: string }>(`SELECT name FROM migrations ORDER BY id`);
    return res.rows.map((r) => r.name);
  });
}

/** `steps` on the migrations of `db` in process: the CLI's own calls, without its node start. */
async function inProcess(db: DatabaseName, url: string, steps: (ds: DataSource) => Promise<void>) {
  const ds = new DataSource({ type: 'postgres', url, migrations: MIGRATIONS[db] });
  await ds.initialize();
  try {
    await steps(ds);
  } finally {
    await ds.destroy();
  }
}

/** Reverts the last `n` migrations (in process), as `typeorm migration:revert` does one. */
async function revert(ds: DataSource, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await ds.undoLastMigration({ transaction: 'all' });
}

/** Reverts the last `n` migrations, re-applies them, and reverts them again (in process). */
function roundTrip(db: DatabaseName, url: string, n: number): Promise<void> {
  return inProcess(db, url, async (ds) => {
    await revert(ds, n);
    expect(await ds.runMigrations({ transaction: 'each' })).toHaveLength(n);
    await revert(ds, n);
  });
}

const namesOf = (db: DatabaseName) =>
  (MIGRATIONS[db] as { name: string }[]).map((m) => m.name).sort();

async function count(c: Client, table: string): Promise<number> {
  return Number((await c.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
}

/** Every way of removing rows is refused, and the rows are all still there afterwards. */
async function expectNothingRemoves(url: string, table: string, cascadeFrom: string[] = []) {
  await withClient(url, async (c) => {
    const rows = await count(c, table);
    expect(rows).toBeGreaterThan(0);
    const refused = new RegExp(
      `^${table} (rows are never removed|is append-only): (DELETE|TRUNCATE) (refused|rejected)$`,
    );
    const attempts = [
      `DELETE FROM ${table}`,
      `DELETE FROM ${table} WHERE false`,
      `TRUNCATE ${table}`,
      `TRUNCATE ${table} CASCADE`,
    ];
    for (const sql of attempts) {
      await expect(c.query(sql)).rejects.toThrow(refused);
    }
    // A cascade from a parent reaches a guarded table (this one, or another refusing first).
    for (const parent of cascadeFrom) {
      await expect(c.query(`TRUNCATE ${parent} CASCADE`)).rejects.toThrow(
        / (rows are never removed|is append-only): TRUNCATE (refused|rejected)$/,
      );
    }
    // Replication mode does not switch the guards off (they fire ALWAYS).
    await c.query(`SET session_replication_role = replica`);
    await expect(c.query(`DELETE FROM ${table}`)).rejects.toThrow(refused);
    await expect(c.query(`TRUNCATE ${table}`)).rejects.toThrow(refused);
    await c.query(`RESET session_replication_role`);
    expect(await count(c, table)).toBe(rows);
  });
}

describe('records are never removed; down migrations never rewind a token source', () => {
  const urls = {} as Record<DatabaseName, string>;

  beforeAll(async () => {
    const dbs = ['lockdb', 'paydb', 'proxydb'] as const;
    const migrated = await Promise.all(dbs.map((db) => cliMigrated(db)));
    dbs.forEach((db, i) => (urls[db] = migrated[i]));
  });

  it('the TypeORM CLI applies every registered migration of each database', async () => {
    for (const db of ['lockdb', 'paydb', 'proxydb'] as const) {
      expect({ db, applied: (await applied(urls[db])).sort() }).toEqual({
        db,
        applied: namesOf(db),
      });
    }
  });

  it('lockdb: lock_revocation refuses UPDATE, DELETE and TRUNCATE', async () => {
    await withClient(urls.lockdb, (c) =>
      c.query(
        `INSERT INTO lock_revocation (revocation_id, lock_key, revoked_token, new_token_floor,
           operator, reason, holder_owner_id, holder_session_id)
         VALUES ($1, 'payout:acct-1', 5, 6, 'oncall', 'stuck holder', 'worker-1', $2)`,
        [randomUUID(), randomUUID()],
      ),
    );
    await expectNothingRemoves(urls.lockdb, 'lock_revocation');
    await withClient(urls.lockdb, async (c) => {
      await expect(c.query(`UPDATE lock_revocation SET operator = 'someone'`)).rejects.toThrow(
        'lock_revocation is append-only: UPDATE refused',
      );
    });
  });

  it('paydb: ledger_entry and payout_transition refuse DELETE and TRUNCATE, also by cascade', async () => {
    const accountId = await seedFundedAccount(urls.paydb);
    const payoutId = await seedPendingPayout(urls.paydb, accountId);
    await withClient(urls.paydb, (c) =>
      c.query(
        `INSERT INTO payout_transition (payout_id, from_state, to_state, event, actor, token)
         VALUES ($1, 'PENDING', 'CLAIMED', 'CLAIM', 'worker-1', 7)`,
        [payoutId],
      ),
    );
    await expectNothingRemoves(urls.paydb, 'ledger_entry', ['account', 'payout']);
    await expectNothingRemoves(urls.paydb, 'payout_transition', ['payout']);
  });

  it('paydb: a payout carries exactly railClientRef(payoutId), nothing else', async () => {
    const accountId = await seedFundedAccount(urls.paydb);
    const payoutId = await seedPendingPayout(urls.paydb, accountId);
    await withClient(urls.paydb, async (c) => {
      const row = await c.query(`SELECT client_ref FROM payout WHERE payout_id = $1`, [payoutId]);
      expect(row.rows).toEqual([{ client_ref: railClientRef(payoutId) }]);
      const insert = (id: string, ref: string) =>
        c.query(
          `INSERT INTO payout (payout_id, account_id, amount_minor, currency, beneficiary_ref, client_ref)
           VALUES ($1, $2, 1, 'EUR', 'ben', $3)`,
          [id, accountId, ref],
        );
      const id = randomUUID();
      for (const ref of ['po-chosen', `po-${id.toUpperCase()}`, railClientRef(randomUUID())]) {
        await expect(insert(id, ref)).rejects.toThrow(/payout_client_ref_derived/);
      }
      await expect(c.query(`UPDATE payout SET client_ref = 'po-x'`)).rejects.toThrow(
        /payout_client_ref_derived/,
      );
    });
  });

  it('proxydb: rail_submission (even an unresolved intent) and rail_high_water are never removed', async () => {
    await withClient(urls.proxydb, async (c) => {
      await c.query(`INSERT INTO rail_high_water (account_id, highest_token) VALUES ('acct-1', 9)`);
      await c.query(
        `INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token, owner_id,
           idempotency_key, client_ref, amount_minor, currency, beneficiary_ref)
         VALUES ($1, $2, 'acct-1', 9, 'worker-1', 'k', $3, 100, 'EUR', 'ben')`,
        [randomUUID(), randomUUID(), railClientRef(randomUUID())],
      );
    });
    await expectNothingRemoves(urls.proxydb, 'rail_submission');
    await expectNothingRemoves(urls.proxydb, 'rail_high_water');
  });

  it('lockdb: a revocation request is kept, and its migration refuses to revert over one', async () => {
    const lockdb = await migratedDatabase('lockdb');
    await withClient(lockdb, (c) =>
      c.query(
        `INSERT INTO lock_revocation_request
           (request_id, lock_key, operator, reason, requested_by, expires_at)
         VALUES ($1, 'payout:acct-1', 'oncall', 'stuck holder', 'operator-a', now())`,
        [randomUUID()],
      ),
    );
    await withClient(lockdb, async (c) => {
      for (const sql of [
        'DELETE FROM lock_revocation_request',
        'TRUNCATE lock_revocation_request',
      ]) {
        await expect(c.query(sql)).rejects.toThrow(
          /^lock_revocation_request: (DELETE|TRUNCATE) refused/,
        );
      }
      expect(await count(c, 'lock_revocation_request')).toBe(1);
    });
    // The session states, the history index and the reader grants above it revert first (they
    // hold no record).
    await inProcess('lockdb', lockdb, (ds) => revert(ds, 3));
    const before = (await applied(lockdb)).length;
    const refused = await typeorm('migration:revert', 'lockdb', lockdb);
    expect(refused.code).not.toBe(0);
    expect(refused.out).toContain('revocation requests are audit records');
    expect((await applied(lockdb)).length).toBe(before);
  });

  it('revert refuses to drop fencing_token_seq, rail_high_water or account.fence without the override', async () => {
    const lockdb = await migratedDatabase('lockdb');
    const proxydb = await migratedDatabase('proxydb');
    const paydb = await migratedDatabase('paydb');
    await withClient(lockdb, (c) => c.query(`SELECT setval('fencing_token_seq', 1000000)`));
    await withClient(proxydb, (c) =>
      c.query(`INSERT INTO rail_high_water (account_id, highest_token) VALUES ('acct-1', 1000000)`),
    );
    const accountId = await seedFundedAccount(paydb);
    await withClient(paydb, (c) =>
      c.query(`UPDATE account SET fence = 1000000 WHERE account_id = $1`, [accountId]),
    );

    // The later migrations revert (and re-apply) cleanly: their downs touch no token.
    for (const [db, url, harmless] of [
      ['lockdb', lockdb, 6],
      ['proxydb', proxydb, 6],
      ['paydb', paydb, 8],
    ] as const) {
      await roundTrip(db, url, harmless);
      const refused = await typeorm('migration:revert', db, url, {
        DLOCK_ALLOW_DESTRUCTIVE_DOWN: 'yes', // only exactly 1 counts
      });
      expect(refused.code).not.toBe(0);
      expect(refused.out).toContain('refusing to revert');
      expect(refused.out).toContain('docs/operations.md');
      expect(refused.out).toContain('DLOCK_ALLOW_DESTRUCTIVE_DOWN=1');
      expect((await applied(url)).length).toBe(namesOf(db).length - harmless);
    }
    await withClient(lockdb, async (c) => {
      const seq = await c.query(`SELECT last_value FROM fencing_token_seq`);
      expect(seq.rows).toEqual([{ last_value: '1000000' }]);
    });
    await withClient(proxydb, async (c) => {
      const marks = await c.query(`SELECT account_id, highest_token FROM rail_high_water`);
      expect(marks.rows).toEqual([{ account_id: 'acct-1', highest_token: '1000000' }]);
    });
    await withClient(paydb, async (c) => {
      const fence = await c.query(`SELECT fence FROM account WHERE account_id = $1`, [accountId]);
      expect(fence.rows).toEqual([{ fence: '1000000' }]);
    });

    // The documented override is for throwaway databases: it proceeds.
    const override = await typeorm('migration:revert', 'lockdb', lockdb, {
      DLOCK_ALLOW_DESTRUCTIVE_DOWN: '1',
    });
    expect(override.code).toBe(0);
    await withClient(lockdb, async (c) => {
      const seq = await c.query(`SELECT to_regclass('fencing_token_seq') AS seq`);
      expect(seq.rows).toEqual([{ seq: null }]);
    });
    expect(await applied(lockdb)).toEqual([]);
  });

  it('proxydb: the WITHDRAWN migration does not revert over a WITHDRAWN row (it would lose it)', async () => {
    const proxydb = await migratedDatabase('proxydb');
    await withClient(proxydb, (c) =>
      c.query(
        `INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token, owner_id,
           idempotency_key, client_ref, amount_minor, currency, beneficiary_ref, outcome, error_code,
           resolved_at)
         VALUES ($1, $2, 'acct-1', 9, 'worker-1', 'k', $3, 100, 'EUR', 'ben', 'WITHDRAWN',
           'CONNECTION_CLOSED_BEFORE_WRITE', now())`,
        [randomUUID(), randomUUID(), railClientRef(randomUUID())],
      ),
    );
    // The kept proofs (none here), the admission function, the history index, the reader grants
    // and the audit chain migration above it revert first (they hold no record; the chain's
    // drops only its columns).
    await inProcess('proxydb', proxydb, (ds) => revert(ds, 5));
    const refused = await typeorm('migration:revert', 'proxydb', proxydb);
    expect(refused.code).not.toBe(0);
    expect(refused.out).toContain('1 WITHDRAWN rail_submission row(s) exist');
    expect((await applied(proxydb)).sort()).toEqual(
      namesOf('proxydb').filter(
        (n) =>
          n !== 'RailAttemptsChained1796313600000' &&
          n !== 'ReconcilerReader1796486400000' &&
          n !== 'HistoryBounded1796572800000' &&
          n !== 'AdmissionAtOnce1796745600000' &&
          n !== 'GrantProofKept1796832000000',
      ),
    );
    await withClient(proxydb, async (c) => expect(await count(c, 'rail_submission')).toBe(1));
  });

  it('proxydb: proofs are kept from the migration on; it does not revert over a kept proof', async () => {
    const proxydb = await migratedDatabase('proxydb');
    // A row from before the migration: marked as one that kept no proof, rewriting nothing.
    const legacy = randomUUID();
    await inProcess('proxydb', proxydb, (ds) => revert(ds, 1));
    await withClient(proxydb, (c) =>
      c.query(
        `INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token, owner_id,
           idempotency_key, client_ref, amount_minor, currency, beneficiary_ref)
         VALUES ($1, $2, 'acct-0', 8, 'worker-1', 'k0', $3, 100, 'EUR', 'ben')`,
        [legacy, randomUUID(), railClientRef(randomUUID())],
      ),
    );
    await inProcess('proxydb', proxydb, async (ds) => {
      expect(await ds.runMigrations({ transaction: 'each' })).toHaveLength(1);
    });
    await withClient(proxydb, (c) =>
      c.query(
        `INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token, owner_id,
           idempotency_key, client_ref, amount_minor, currency, beneficiary_ref, grant_proof)
         VALUES ($1, $2, 'acct-1', 9, 'worker-1', 'k', $3, 100, 'EUR', 'ben', 'h.p.s')`,
        [randomUUID(), randomUUID(), railClientRef(randomUUID())],
      ),
    );
    await expect(inProcess('proxydb', proxydb, (ds) => revert(ds, 1))).rejects.toThrow(
      'refusing to revert: 1 rail_submission row(s) keep a grant proof',
    );
    expect(await applied(proxydb)).toContain('GrantProofKept1796832000000');
    await withClient(proxydb, async (c) => {
      const kept = await c.query(
        `SELECT submission_id = $1 AS legacy, grant_proof, grant_proof_kept FROM rail_submission
          ORDER BY created_at`,
        [legacy],
      );
      expect(kept.rows).toEqual([
        { legacy: true, grant_proof: null, grant_proof_kept: false },
        { legacy: false, grant_proof: 'h.p.s', grant_proof_kept: true },
      ]);
    });
  });
});
