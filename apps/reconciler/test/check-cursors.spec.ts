import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  migratedDatabase,
  readerUrl,
  seedFundedAccount,
  spawnApp,
  waitFor,
  withClient,
} from '@dlock/testing';
import { closeDataSource, postgresDataSource } from '@dlock/persistence';
import type { DataSource } from 'typeorm';
import { ReadOnlyDb, readOnlySettings } from '../src/persistence/read-only-db.gateway';
import { CheckCursors } from '../src/detective/persistence/check-cursors.repository';

/**
 * The detective's cursors survive a restart when kept in a file
 * (RECONCILER_CHECK_CURSOR_FILE, docs/scale.md): restored cursors read only
 * what came after them, and a file that is not a snapshot is refused (the
 * process then reads from the beginning).
 */
jest.setTimeout(90_000);

let paydbUrl: string;
let source: DataSource;
let paydb: ReadOnlyDb;

beforeAll(async () => {
  paydbUrl = await migratedDatabase('paydb');
  const limits = { poolMax: 2, connectTimeoutMs: 5_000, statementTimeoutMs: 10_000 };
  source = postgresDataSource(readOnlySettings('paydb', paydbUrl, limits));
  paydb = new ReadOnlyDb(source, { name: 'paydb', tries: 1, connectTimeoutMs: 5_000 });
});

afterAll(() => source && closeDataSource(source));

/** One ledger leg with no counterpart and no balance change, written `ago` before now. */
async function plantOneLeg(accountId: string, ago: string): Promise<string> {
  const group = randomUUID();
  // As a replica applies it: the group-balance check (not ENABLE ALWAYS) does not run, the chain does.
  await withClient(paydbUrl, async (c) => {
    await c.query('BEGIN');
    await c.query('SET LOCAL session_replication_role = replica');
    await c.query(
      `INSERT INTO ledger_entry (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, kind, created_at)
       VALUES ($1, $2, $3, 7, 'funding-EUR', 'OPENING_BALANCE', now() - $4::interval)`,
      [randomUUID(), group, accountId, ago],
    );
    await c.query('COMMIT');
  });
  return group;
}

async function bothLedgerChecks(cursors: CheckCursors): Promise<number[]> {
  const groups = await cursors.ledgerGroupsBalanced(paydb);
  const balances = await cursors.balanceEqualsLedger(paydb);
  return [groups.violations, balances.violations];
}

describe('detective cursors kept across a restart', () => {
  it('restored cursors read what came after them; fresh ones read the history', async () => {
    const accountId = await seedFundedAccount(paydbUrl);
    const before = new CheckCursors(0);
    expect(await bothLedgerChecks(before)).toEqual([0, 0]);
    const kept = JSON.parse(JSON.stringify(before.snapshot())) as unknown;

    // Written behind the cursors' backs: only a reader of the whole history sees it.
    await plantOneLeg(accountId, '1 hour');
    const restored = CheckCursors.restore(0, kept);
    expect(await bothLedgerChecks(restored)).toEqual([0, 0]);
    expect(await bothLedgerChecks(new CheckCursors(0))).toEqual([1, 1]);

    // What comes after the cursors is read, with the balance sums they carried.
    const group = await plantOneLeg(accountId, '0 seconds');
    const found = await restored.ledgerGroupsBalanced(paydb);
    expect(found.offenders).toEqual([{ txnGroupId: group, sumMinor: '7' }]);
    expect((await restored.balanceEqualsLedger(paydb)).violations).toBe(1);
  });

  it('refuses what is not a snapshot of this version', () => {
    const good = new CheckCursors(0).snapshot();
    const bad: unknown[] = [
      null,
      'text',
      { ...good, version: 2 },
      { ...good, groups: { since: 'not a time', found: [] } },
      { ...good, submissions: { since: null, found: [1] } },
      { ...good, balances: { since: null, sums: { a: 'x' } } },
      { ...good, tokens: { after: null, found: [], violations: 1.5 } },
    ];
    for (const raw of bad) expect(() => CheckCursors.restore(0, raw)).toThrow();
    expect(CheckCursors.restore(0, good).snapshot()).toEqual(good);
  });

  it('the reconciler writes its cursors after each run and restores them at the next start', async () => {
    const proxydbUrl = await migratedDatabase('proxydb');
    const dir = await mkdtemp(path.join(os.tmpdir(), 'dlock-cursors-'));
    const file = path.join(dir, 'check-cursors.json');
    const env = {
      LOCK_SERVER_URL: 'http://127.0.0.1:9',
      PAYMENT_RESOURCE_URL: 'http://127.0.0.1:9',
      RAIL_STUB_URL: 'http://127.0.0.1:9',
      PAYDB_URL: readerUrl(paydbUrl),
      PROXYDB_URL: readerUrl(proxydbUrl),
      OWNER_ID: 'cursor-test',
      RECONCILER_CHECK_INTERVAL_MS: '200',
      RECONCILER_CHECK_CURSOR_FILE: file,
      LOG_LEVEL: 'info',
    };
    try {
      await writeFile(file, '{"version": 99}');
      const first = await spawnApp('reconciler', env);
      const saved = await waitFor(
        async () => {
          const text = await readFile(file, 'utf8').catch(() => '');
          return text.includes('"version": 1') && text.includes('"since": "') ? text : null;
        },
        20_000,
        'cursors written after a run',
      );
      expect(first.output()).toContain('detective_cursors_unreadable');
      await first.stop();
      expect(CheckCursors.restore(0, JSON.parse(saved)).snapshot().groups.since).not.toBeNull();

      const second = await spawnApp('reconciler', env);
      await waitFor(
        () => Promise.resolve(second.output().includes('detective_cursors_restored')),
        20_000,
        'cursors restored at start',
      );
      expect(second.output()).not.toContain('detective_cursors_unreadable');
      await second.stop();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
