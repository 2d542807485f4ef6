import path from 'node:path';
import { LockClient } from '@dlock/lock-client';
import {
  REPO_ROOT,
  http,
  spawnApp,
  waitFor,
  withClient,
  withTriggersOff,
  type RunningApp,
  testTokenProvider,
  runNode,
  type NodeRun,
} from '@dlock/testing';
import {
  metric,
  scriptStub,
  seedAccount,
  seedPayout,
  startExecutor,
  startServices,
  waitForState,
  type Services,
} from './support';

/**
 * The audit chains (docs/audit.md) after a real workload: payouts posted and
 * declined by a real executor through every service, and a force-revoke. The
 * command verifies every chain clean; the reconciler's detective check agrees,
 * then reports a ledger row edited behind the guards' backs (metric by chain
 * only, the row in the log event).
 */
jest.setTimeout(120_000);

let s: Services;
let exec: RunningApp;
let reconciler: RunningApp;

function auditVerify(s: Services): Promise<NodeRun> {
  const script = path.join(REPO_ROOT, 'dist', 'scripts', 'audit-verify.js');
  return runNode(script, [], { LOCKDB_URL: s.lockdb, PAYDB_URL: s.paydb, PROXYDB_URL: s.proxydb });
}

beforeAll(async () => {
  s = await startServices();
  exec = await startExecutor(s, 'exec-audit');
});

afterAll(async () => {
  await reconciler?.stop();
  await exec?.stop();
  await s?.stop();
});

async function count(url: string, table: string, where = 'true'): Promise<number> {
  return withClient(url, async (c) =>
    Number((await c.query(`SELECT count(*) AS n FROM ${table} WHERE ${where}`)).rows[0].n),
  );
}

test('after real payouts and a revocation every chain verifies clean; an edited row is then reported', async () => {
  const account = await seedAccount(s.paydb);
  const posted: string[] = [];
  for (let i = 0; i < 4; i++) posted.push(await seedPayout(s.paydb, account, 100 + i));
  for (const id of posted) await waitForState(s.paydb, id, ['POSTED']);
  await scriptStub(s.stub.url, { script: ['decline'] });
  const declined = await seedPayout(s.paydb, await seedAccount(s.paydb));
  await waitForState(s.paydb, declined, ['FAILED']);

  const session = await new LockClient({
    baseUrl: s.lockServer.url,
    ownerId: 'audit-holder',
    token: testTokenProvider('audit-holder'),
  }).openSession();
  await session.acquire('audit:stuck');
  const revoked = await http('POST', `${s.lockServer.url}/v1/locks/audit:stuck/revoke`, {
    body: { operator: 'ops-jane', reason: 'stuck holder OPS-1' },
  });
  expect(revoked.status).toBe(200);
  await session.close().catch(() => undefined);

  const links = {
    lock_revocation: await count(s.lockdb, 'lock_revocation'),
    payout_transition: await count(s.paydb, 'payout_transition'),
    ledger_entry: await count(s.paydb, 'ledger_entry'),
    rail_submission: await count(s.proxydb, 'rail_submission'),
    rail_submission_outcome: await count(s.proxydb, 'rail_submission', 'outcome IS NOT NULL'),
  };
  // 5 payouts: claims, submissions, outcomes, posts; 2 openings + 4 postings of 2 legs.
  expect(links).toEqual({
    lock_revocation: 1,
    payout_transition: expect.any(Number),
    ledger_entry: 12,
    rail_submission: 5,
    rail_submission_outcome: 5,
  });
  expect(links.payout_transition).toBeGreaterThanOrEqual(5 * 3);

  const run = await auditVerify(s);
  expect({
    code: run.code,
    breaks: run.out.split('\n').filter((l) => l.includes('BREAK')),
  }).toEqual({ code: 0, breaks: [] });
  for (const [chain, n] of Object.entries(links)) {
    expect(run.out).toMatch(
      new RegExp(
        ` ok ${chain}: \\d+ partition\\(s\\), ${n} link\\(s\\), heads digest [0-9a-f]{64}\\n`,
      ),
    );
  }

  reconciler = await spawnApp('reconciler', {
    LOCK_SERVER_URL: 'http://127.0.0.1:9',
    PAYMENT_RESOURCE_URL: 'http://127.0.0.1:9',
    RAIL_STUB_URL: 'http://127.0.0.1:9',
    PAYDB_URL: s.paydb,
    PROXYDB_URL: s.proxydb,
    LOCKDB_URL: s.lockdb,
    OWNER_ID: 'audit-test',
    RECONCILER_AUDIT_INTERVAL_MS: '200',
    // Every link settled at once, and a full walk besides each checkpointed pass (docs/audit.md).
    RECONCILER_AUDIT_SETTLE_MS: '0',
    RECONCILER_AUDIT_FULL_INTERVAL_MS: '100',
    LOG_LEVEL: 'info',
  });
  // The last-verified gauge reads the start until then (no stale alert at boot), so wait for
  // the links themselves: a complete pass counts every chain's.
  const verified = async () => {
    for (const [chain, n] of Object.entries(links)) {
      if ((await metric(reconciler.url, 'dlock_audit_chain_verified_links', { chain })) !== n)
        return false;
    }
    return true;
  };
  await waitFor(verified, 20_000, 'a first complete audit verification').catch(() => undefined);
  for (const [chain, n] of Object.entries(links)) {
    expect({
      chain,
      links: await metric(reconciler.url, 'dlock_audit_chain_verified_links', { chain }),
    }).toEqual({ chain, links: n });
  }
  expect(await metric(reconciler.url, 'dlock_audit_chain_breaks')).toBe(0);

  // An intruder with the owner's rights edits one posting, every trigger of the table off.
  const edited = await withClient(s.paydb, async (c) => {
    const row = await c.query<{ id: string; seq: string; account: string }>(
      `SELECT entry_id::text AS id, chain_seq::text AS seq, account_id AS account FROM ledger_entry
        WHERE payout_id = $1 ORDER BY chain_seq LIMIT 1`,
      [posted[1]],
    );
    await withTriggersOff(
      c,
      'ledger_entry',
      `UPDATE ledger_entry SET amount_minor = amount_minor * 10 WHERE entry_id = $1`,
      [row.rows[0].id],
    );
    return row.rows[0];
  });
  await waitFor(
    async () =>
      (await metric(reconciler.url, 'dlock_audit_chain_breaks', { chain: 'ledger_entry' })) === 1,
    20_000,
    'the ledger_entry break reported',
  );
  expect(await metric(reconciler.url, 'dlock_audit_chain_breaks')).toBe(1);
  // The walk stops at the break: the links of the partitions walked before it, and no more.
  expect(
    await metric(reconciler.url, 'dlock_audit_chain_verified_links', { chain: 'ledger_entry' }),
  ).toBeLessThan(links.ledger_entry);
  const events = reconciler
    .output()
    .split('\n')
    .filter((l) => l.includes('"audit_chain_break"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(events[0]).toEqual(
    expect.objectContaining({
      event: 'audit_chain_break',
      chain: 'ledger_entry',
      table: 'ledger_entry',
      kind: 'hash_mismatch',
      partition: edited.account,
      rowId: edited.id,
      seq: edited.seq,
      expected: expect.stringMatching(/^[0-9a-f]{64}$/),
      found: expect.stringMatching(/^[0-9a-f]{64}$/),
    }),
  );
  // Metric labels name the chain, never the row.
  expect((await http('GET', `${reconciler.url}/metrics`)).text).not.toContain(edited.id);

  // A whole partition's chain deleted (the only revocation) is a consistent, shorter chain:
  // the reconciler still reports it: the link its checkpoint recorded is gone.
  await withClient(s.lockdb, (c) =>
    withTriggersOff(c, 'lock_revocation', `DELETE FROM lock_revocation`),
  );
  await waitFor(
    async () =>
      (await metric(reconciler.url, 'dlock_audit_chain_breaks', { chain: 'lock_revocation' })) ===
      1,
    20_000,
    'the lock_revocation break reported',
  );
  const truncated = reconciler
    .output()
    .split('\n')
    .filter((l) => l.includes('"audit_chain_break"') && l.includes('"lock_revocation"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(truncated[0]).toEqual(
    expect.objectContaining({
      chain: 'lock_revocation',
      kind: 'truncated',
      seq: '1',
      expected: expect.stringMatching(/^seq 1 hash [0-9a-f]{64}$/),
      found: 'no such row',
    }),
  );
});
