import { spawnSync } from 'node:child_process';
import { railClientRef } from '@dlock/payout-contract';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { LockClient, type LockSession } from '@dlock/lock-client';
import {
  http,
  migratedDatabase,
  readerUrl,
  seedFundedAccount,
  seedPendingPayout,
  REPO_ROOT,
  spawnApp,
  waitFor,
  withClient,
  type RunningApp,
  testTokenProvider,
  testGrantProof,
  scratchDir,
  scrapeSeries,
} from '@dlock/testing';
import { ensureSigningKeys, SigningKeyRing } from '@dlock/identity';
import { GRANT_PROOF_TYPE } from '@dlock/lock-api';
import { closeDataSource, postgresDataSource } from '@dlock/persistence';
import { ReadOnlyDb, readOnlySettings } from '../src/persistence/read-only-db.gateway';

/**
 * The reconciler as a real process against a real lock-server, payment-resource
 * and rail stub, over real PostgreSQL: ambiguous payouts resolved both ways,
 * duplicates flagged and never resolved, SLA escalation, and the detective
 * checks on a clean and on a deliberately corrupted database.
 */

const OPENING_MINOR = 100_000;
const WINDOW_MS = 500;
const TEST_OWNER = 'test-worker';

let lockdb: string;
let paydb: string;
let proxydb: string;
let lockServer: RunningApp;
let payments: RunningApp;
let stub: RunningApp;
let reconciler: RunningApp;
let proxy: RunningApp;
let session: LockSession;

async function sql<T = Record<string, unknown>>(url: string, text: string, params: unknown[] = []) {
  return withClient(url, async (c) => (await c.query(text, params)).rows as T[]);
}

/** Out-of-band fixture data (docs/payment-resource.md): a customer account funded through the ledger. */
const newAccount = () => seedFundedAccount(paydb, OPENING_MINOR);
const newPayout = (accountId: string, amountMinor: number) =>
  seedPendingPayout(paydb, accountId, amountMinor);

async function write(payoutId: string, op: string, token: bigint, body: unknown) {
  const res = await http('POST', `${payments.url}/v1/payouts/${payoutId}/${op}`, {
    headers: {
      'x-fencing-token': token.toString(),
      'x-owner-id': TEST_OWNER,
      'x-idempotency-key': `payout-${payoutId}`,
    },
    body,
  });
  expect({ op, status: res.status, body: res.body }).toEqual({
    op,
    status: 200,
    body: expect.anything(),
  });
  return res.body as Record<string, unknown>;
}

async function railSubmit(clientRef: string, amountMinor: number): Promise<string> {
  const res = await http('POST', `${stub.url}/submit`, {
    body: { clientRef, amountMinor, currency: 'EUR' },
  });
  expect(res.status).toBe(200);
  return (res.body as { railReference: string }).railReference;
}

/**
 * The proxy's intent for the submission, left unresolved: a proxy that died
 * between the intent and the rail's answer, which is what R3 reads (docs/rail.md).
 * It keeps the grant proof it was admitted on, as the proxy does.
 */
async function proxyIntent(
  payoutId: string,
  accountId: string,
  amountMinor: number,
  submissionId: string,
  grant: { token: bigint; proof: string },
): Promise<void> {
  const [{ beneficiary_ref }] = await sql<{ beneficiary_ref: string }>(
    paydb,
    'SELECT beneficiary_ref FROM payout WHERE payout_id = $1',
    [payoutId],
  );
  await sql(
    proxydb,
    `INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token, owner_id,
       idempotency_key, client_ref, amount_minor, currency, beneficiary_ref, fencing_enforced,
       grant_proof)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'EUR', $9, true, $10)`,
    [
      submissionId,
      payoutId,
      accountId,
      grant.token.toString(),
      TEST_OWNER,
      `payout-${payoutId}`,
      railClientRef(payoutId),
      amountMinor,
      beneficiary_ref,
      grant.proof,
    ],
  );
}

interface Ambiguous {
  payoutId: string;
  accountId: string;
  amountMinor: number;
  submissionId: string;
  token: bigint;
  railReferences: string[];
}

/**
 * A worker's path into RAIL_AMBIGUOUS under a real grant: P2 -> P6 SUBMITTED,
 * then `onRail` plays what reached the rail, then P6 AMBIGUOUS; release.
 */
async function ambiguousPayout(
  onRail: (clientRef: string, amountMinor: number) => Promise<string[]>,
  amountMinor = 2_500,
): Promise<Ambiguous> {
  const accountId = await newAccount();
  const payoutId = await newPayout(accountId, amountMinor);
  const submissionId = randomUUID();
  const lock = await session.acquire(`payout:${accountId}`);
  const token = lock.fencingToken;
  try {
    await write(payoutId, 'claim', token, { expectedState: 'PENDING' });
    await write(payoutId, 'rail-outcome', token, { outcome: 'SUBMITTED', submissionId });
    await proxyIntent(payoutId, accountId, amountMinor, submissionId, {
      token,
      proof: lock.grantProof,
    });
    const railReferences = await onRail(railClientRef(payoutId), amountMinor);
    await write(payoutId, 'rail-outcome', token, { outcome: 'AMBIGUOUS', submissionId });
    return { payoutId, accountId, amountMinor, submissionId, token, railReferences };
  } finally {
    await lock.release();
  }
}

async function payout(payoutId: string): Promise<Record<string, any>> {
  const res = await http('GET', `${payments.url}/v1/payouts/${payoutId}`);
  expect(res.status).toBe(200);
  return res.body;
}

async function report(): Promise<Record<string, any>> {
  const res = await http('GET', `${reconciler.url}/v1/reconciler/report`);
  expect(res.status).toBe(200);
  return res.body;
}

/**
 * Waits for a detective run that started after `since` and, with `until`, for the first such run
 * it holds for (a check may answer `error` for a run, e.g. before its keys load on a busy machine,
 * and judge the next); past the deadline, the last fresh run, for the assertions to show.
 */
async function freshRun(
  since: number,
  until: (run: Record<string, any>) => boolean = () => true,
): Promise<Record<string, any>> {
  let last: Record<string, any> | undefined;
  await waitFor(
    async () => {
      const run = (await report()).detective.lastRun;
      if (!run || Date.parse(run.startedAt) <= since) return undefined;
      last = run;
      return until(run) ? run : undefined;
    },
    10_000,
    'a fresh detective run',
  ).catch((err: unknown) => {
    if (last === undefined) throw err;
  });
  return last!;
}

beforeAll(async () => {
  [lockdb, paydb, proxydb] = await Promise.all([
    migratedDatabase('lockdb'),
    migratedDatabase('paydb'),
    migratedDatabase('proxydb'),
  ]);
  [lockServer, payments, stub] = await Promise.all([
    spawnApp('lock-server', { LOCK_BACKEND: 'pg', LOCKDB_URL: lockdb }),
    spawnApp('payment-resource', { PAYDB_URL: paydb }),
    spawnApp('rail-stub', {
      RAIL_STUB_JOURNAL_PATH: path.join(scratchDir('recon-stub-'), 'j.jsonl'),
      RAIL_STUB_JOURNAL_FSYNC: 'false',
      RAIL_STUB_SETTLEMENT_WINDOW_MS: String(WINDOW_MS),
    }),
  ]);
  // R3, the rail's record receipted, is what P8 and P3 are written on (docs/rail.md, "Receipts").
  proxy = await spawnApp('rail-proxy', { PROXYDB_URL: proxydb, RAIL_STUB_URL: stub.url });
  // As it is deployed: every database through its read-only role (docs/operations.md).
  reconciler = await spawnApp('reconciler', {
    LOCK_SERVER_URL: lockServer.url,
    PAYMENT_RESOURCE_URL: payments.url,
    RAIL_PROXY_URL: proxy.url,
    RAIL_STUB_URL: stub.url,
    PAYDB_URL: readerUrl(paydb),
    PROXYDB_URL: readerUrl(proxydb),
    LOCKDB_URL: readerUrl(lockdb),
    OWNER_ID: 'reconciler-test',
    RECONCILER_INTERVAL_MS: '200',
    RECONCILER_CHECK_INTERVAL_MS: '250',
    RECONCILER_SETTLEMENT_WINDOW_MS: String(WINDOW_MS),
    RECONCILER_TOKEN_MATCH_GRACE_MS: '0',
    // The checks over kept records judge what a test just wrote on their next run.
    RECONCILER_CHECK_SETTLE_MS: '0',
  });
  session = await new LockClient({
    baseUrl: lockServer.url,
    ownerId: TEST_OWNER,
    token: testTokenProvider(TEST_OWNER),
  }).openSession();
}, 60_000);

afterAll(async () => {
  await session?.close();
  await Promise.all([reconciler, proxy, payments, stub, lockServer].map((app) => app?.stop()));
});

describe('reconciler: RAIL_AMBIGUOUS resolution from rail evidence (FR-26)', () => {
  let paid: Ambiguous;
  let unpaid: Ambiguous;
  let twice: Ambiguous;
  let odd: Ambiguous;

  beforeAll(async () => {
    paid = await ambiguousPayout(async (ref, amount) => [await railSubmit(ref, amount)]);
    unpaid = await ambiguousPayout(async () => []);
    twice = await ambiguousPayout(async (ref, amount) => [
      await railSubmit(ref, amount),
      await railSubmit(ref, amount),
    ]);
    // The rail booked a different amount under this reference: evidence a human must read.
    odd = await ambiguousPayout(async (ref, amount) => [await railSubmit(ref, amount + 1)]);
  });

  it('exactly one settled transfer: P8 ACKED under its own token, then POSTED with a balanced ledger', async () => {
    const done = await waitFor(
      async () => {
        const p = await payout(paid.payoutId);
        return p.state === 'POSTED' ? p : undefined;
      },
      15_000,
      'the paid payout to be POSTED',
    );
    expect(done).toMatchObject({
      state: 'POSTED',
      railReference: paid.railReferences[0],
      submissionId: paid.submissionId,
    });
    // The reconciler wrote under a newer grant of its own, never the worker's token.
    expect(BigInt(done.tokenStamp as string)).toBeGreaterThan(paid.token);
    const transitions = await sql<{ to_state: string; event: string; actor: string }>(
      paydb,
      `SELECT to_state, event, actor FROM payout_transition WHERE payout_id = $1 ORDER BY transition_id`,
      [paid.payoutId],
    );
    expect(transitions.slice(-2)).toEqual([
      { to_state: 'RAIL_ACKED', event: 'RESOLVE_ACKED', actor: 'reconciler-test' },
      { to_state: 'POSTED', event: 'POST', actor: 'reconciler-test' },
    ]);
    const legs = await sql<{ account_id: string; amount_minor: string }>(
      paydb,
      `SELECT account_id, amount_minor::text FROM ledger_entry WHERE payout_id = $1 ORDER BY amount_minor`,
      [paid.payoutId],
    );
    expect(legs).toEqual([
      { account_id: paid.accountId, amount_minor: String(-paid.amountMinor) },
      { account_id: 'clearing-EUR', amount_minor: String(paid.amountMinor) },
    ]);
    const account = await http('GET', `${payments.url}/v1/accounts/${paid.accountId}`);
    expect(account.body).toMatchObject({
      balanceMinor: OPENING_MINOR - paid.amountMinor,
      ledgerSumMinor: OPENING_MINOR - paid.amountMinor,
    });
  });

  it('no transfer after the settlement window: P8 NOT_FOUND -> FAILED, no ledger movement', async () => {
    const done = await waitFor(
      async () => {
        const p = await payout(unpaid.payoutId);
        return p.state === 'FAILED' ? p : undefined;
      },
      15_000,
      'the unpaid payout to be FAILED',
    );
    expect(done).toMatchObject({ state: 'FAILED', failureReason: 'RAIL_NOT_FOUND' });
    // Not before the window: the transition came at least WINDOW_MS after ambiguity was recorded.
    expect(
      Date.parse(done.settledAt as string) - Date.parse(done.ambiguousAt as string),
    ).toBeGreaterThanOrEqual(WINDOW_MS);
    const legs = await sql(paydb, `SELECT 1 FROM ledger_entry WHERE payout_id = $1`, [
      unpaid.payoutId,
    ]);
    expect(legs).toEqual([]);
  });

  it('two transfers for one reference: flagged as a duplicate payment, never resolved', async () => {
    await waitFor(
      async () =>
        (await scrapeSeries(reconciler.url, 'reconciler_duplicate_payment_total', 'throw')) === 1,
      15_000,
      'the duplicate to be counted',
    );
    const r = await report();
    expect(r.resolution.duplicates).toEqual([
      {
        payoutId: twice.payoutId,
        accountId: twice.accountId,
        clientRef: railClientRef(twice.payoutId),
        amountMinor: twice.amountMinor,
        currency: 'EUR',
        railReferences: twice.railReferences,
        detectedAt: expect.any(String),
      },
    ]);
    // Several more passes later: still quarantined, counted once, and no write ever attempted.
    const passes = r.resolution.passes as number;
    await waitFor(async () => (await report()).resolution.passes >= passes + 3, 10_000, 'passes');
    expect((await payout(twice.payoutId)).state).toBe('RAIL_AMBIGUOUS');
    expect(await scrapeSeries(reconciler.url, 'reconciler_duplicate_payment_total', 'throw')).toBe(
      1,
    );
    expect(await scrapeSeries(reconciler.url, 'reconciler_duplicate_payments_open', 'throw')).toBe(
      1,
    );
    const writes = await sql(
      paydb,
      `SELECT 1 FROM payout_transition WHERE payout_id = $1 AND actor = 'reconciler-test'`,
      [twice.payoutId],
    );
    expect(writes).toEqual([]);
    expect(reconciler.output()).toContain('"event":"duplicate_payment_detected"');
  });

  it('past the SLA (default 4 h, A-10): escalation metric and event, payout left for a human', async () => {
    expect(await scrapeSeries(reconciler.url, 'payout_ambiguous_escalated_total', 'throw')).toBe(0);
    // Five hours ago, as far as paydb knows (test set-up only).
    await sql(
      paydb,
      `UPDATE payout SET ambiguous_at = clock_timestamp() - interval '5 hours' WHERE payout_id = $1`,
      [odd.payoutId],
    );
    await waitFor(
      async () =>
        (await scrapeSeries(reconciler.url, 'payout_ambiguous_escalated_total', 'throw')) === 1,
      15_000,
      'the escalation',
    );
    expect(await scrapeSeries(reconciler.url, 'payout_ambiguous_past_sla', 'throw')).toBe(1);
    const r = await report();
    expect(r.resolution.pastSla).toEqual([
      expect.objectContaining({ payoutId: odd.payoutId, accountId: odd.accountId }),
    ]);
    expect((await payout(odd.payoutId)).state).toBe('RAIL_AMBIGUOUS');
    expect(
      await scrapeSeries(reconciler.url, 'reconciler_resolution_total{result="mismatch"}', 'throw'),
    ).toBeGreaterThan(0);
    expect(r.resolution.mismatches).toEqual([
      {
        payoutId: odd.payoutId,
        accountId: odd.accountId,
        railReference: odd.railReferences[0],
        reason: `amount ${odd.amountMinor + 1} != ${odd.amountMinor}`,
        detectedAt: expect.any(String),
      },
    ]);
    // Announced once each, however many passes look at the payout.
    const count = (event: string) => reconciler.output().split(`"event":"${event}"`).length - 1;
    expect(count('ambiguous_sla_exceeded')).toBe(1);
    expect(count('rail_evidence_mismatch')).toBe(1);
    expect(count('duplicate_payment_detected')).toBe(1);
  });
});

describe('reconciler: process surface', () => {
  it('is ready when both databases answer', async () => {
    const res = await http('GET', `${reconciler.url}/health/ready`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'ok',
      info: { paydb: { status: 'up' }, proxydb: { status: 'up' } },
    });
  });

  it('its database sessions are read-only: a write fails in PostgreSQL itself', async () => {
    const limits = { poolMax: 1, connectTimeoutMs: 1_000, statementTimeoutMs: 5_000 };
    const source = postgresDataSource(readOnlySettings('paydb', readerUrl(paydb), limits));
    const db = new ReadOnlyDb(source, { name: 'paydb', tries: 1, connectTimeoutMs: 1_000 });
    try {
      await expect(db.query(`UPDATE account SET version = version + 1`)).rejects.toThrow(
        /read-only transaction/,
      );
      await expect(db.query(`SELECT count(*) FROM account`)).resolves.toHaveLength(1);
    } finally {
      await closeDataSource(source);
    }
  });

  it('its role cannot write either, even in a session it switched to read-write', async () => {
    const writes: [string, string][] = [
      [paydb, `UPDATE account SET version = version + 1`],
      [
        paydb,
        `INSERT INTO payout_transition (payout_id, from_state, to_state, event, actor)
               SELECT payout_id, state, state, 'x', 'x' FROM payout LIMIT 1`,
      ],
      [proxydb, `UPDATE rail_high_water SET highest_token = highest_token + 1`],
      [proxydb, `DELETE FROM rail_submission`],
      [lockdb, `SELECT nextval('fencing_token_seq')`],
      [lockdb, `CREATE TABLE reader_was_here (x int)`],
    ];
    const refused = await Promise.all(
      writes.map(([url, statement]) =>
        withClient(readerUrl(url), async (c) => {
          await c.query('SET default_transaction_read_only = off');
          return c.query(statement).then(
            () => 'written',
            (err: Error) => err.message,
          );
        }),
      ),
    );
    expect(refused).toEqual(writes.map(() => expect.stringMatching(/^permission denied for /)));
  });

  it('runs its loops as that role: detective checks, and its sessions are the reader', async () => {
    const since = Date.now();
    await freshRun(since);
    expect(
      await scrapeSeries(reconciler.url, 'reconciler_last_check_timestamp_seconds', 'throw'),
    ).toBeGreaterThan(since / 1000);
    const dbs = [paydb, proxydb].map((url) => new URL(url).pathname.slice(1));
    // A session still authenticating has no role yet (PostgreSQL 18 lists it, usename NULL).
    const sessions = await withClient(paydb, (c) =>
      c.query<{ role: string }>(
        `SELECT DISTINCT usename AS role FROM pg_stat_activity
          WHERE application_name = 'reconciler' AND datname = ANY($1) AND usename IS NOT NULL`,
        [dbs],
      ),
    );
    expect(sessions.rows).toEqual([{ role: 'reconciler_ro' }]);
  });

  it('a bad setting stops the process at start, naming the variable', () => {
    const run = spawnSync(
      process.execPath,
      [path.join(REPO_ROOT, 'dist/apps/reconciler/main.js')],
      {
        env: {
          PATH: process.env.PATH ?? '',
          PAYDB_URL: paydb,
          PROXYDB_URL: proxydb,
          RECONCILER_SETTLEMENT_WINDOW_MS: '5s',
        },
        encoding: 'utf8',
        timeout: 20_000,
      },
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('RECONCILER_SETTLEMENT_WINDOW_MS: must be an integer, got "5s"');
  });
});

describe('reconciler: detective controls (docs/references.md)', () => {
  it('a consistent database reports zero violations on every check', async () => {
    const run = await freshRun(Date.now());
    expect(run).toMatchObject({ status: 'clean', totalViolations: 0 });
    expect(run.checks.map((c: any) => [c.check, c.status, c.violations])).toEqual([
      ['one_in_flight_payout_per_account', 'ok', 0],
      ['claim_history_consistent', 'ok', 0],
      ['ledger_group_balanced', 'ok', 0],
      ['balance_equals_ledger', 'ok', 0],
      ['one_live_submission_per_payout', 'ok', 0],
      ['submission_token_matches_claim', 'ok', 0],
      ['submission_grant_proven', 'ok', 0],
      ['token_regression', 'ok', 0],
    ]);
    // Nothing vacuous: every claim history and every kept grant of the tests above was judged.
    const judged = await sql<{ n: string }>(
      proxydb,
      `SELECT count(*)::text AS n FROM rail_submission WHERE grant_proof IS NOT NULL`,
    );
    expect(Number(judged[0].n)).toBeGreaterThanOrEqual(4);
    expect(
      await scrapeSeries(
        reconciler.url,
        'reconciler_invariant_violations{check="ledger_group_balanced"}',
        'throw',
      ),
    ).toBe(0);
  });

  it('a corrupted database reports each broken invariant by name, with the offending ids', async () => {
    const [account] = await sql<{ account_id: string; fence: string }>(
      paydb,
      `SELECT account_id, fence::text FROM account WHERE fence > 0 ORDER BY account_id LIMIT 1`,
    );
    // INV-03: a one-legged group (the commit-time balance trigger switched off for this test).
    const badGroup = randomUUID();
    const victim = await newAccount();
    await withClient(paydb, async (c) => {
      await c.query(`ALTER TABLE ledger_entry DISABLE TRIGGER ledger_group_balances`);
      await c.query(
        `INSERT INTO ledger_entry (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, kind)
         VALUES ($1, $2, $3, 7, 'funding-EUR', 'OPENING_BALANCE')`,
        [randomUUID(), badGroup, victim],
      );
      await c.query(`ALTER TABLE ledger_entry ENABLE TRIGGER ledger_group_balances`);
      // INV-04: a fence that went backwards.
      await c.query(`ALTER TABLE account DISABLE TRIGGER account_fence_never_decreases`);
      await c.query(`UPDATE account SET fence = fence - 1 WHERE account_id = $1`, [
        account.account_id,
      ]);
      await c.query(`ALTER TABLE account ENABLE TRIGGER account_fence_never_decreases`);
    });
    // INV-01: two payouts of one account in flight at once.
    const crowded = await newAccount();
    const inFlight = [await newPayout(crowded, 100), await newPayout(crowded, 200)];
    await sql(paydb, `UPDATE payout SET state = 'CLAIMED' WHERE payout_id = ANY($1)`, [inFlight]);
    // INV-02 and INV-07: two live submissions for one payout (written as with fencing off, so
    // the unique index does not cover them); one under the claim's token, one under a token
    // paydb never saw.
    const [claimed] = await sql<{ payout_id: string; account_id: string; token: string }>(
      paydb,
      `SELECT t.payout_id::text, p.account_id, t.token::text FROM payout_transition t
         JOIN payout p USING (payout_id) WHERE t.event = 'CLAIM' ORDER BY t.transition_id LIMIT 1`,
    );
    const strayToken = '9223372036854775000';
    const stray = randomUUID();
    const unproven = randomUUID();
    for (const [submissionId, token] of [
      [unproven, claimed.token],
      [stray, strayToken],
    ]) {
      await sql(
        proxydb,
        `INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token, owner_id,
           idempotency_key, client_ref, amount_minor, currency, beneficiary_ref, fencing_enforced)
         VALUES ($1, $2, $3, $4, 'rogue', $5, $6, 100, 'EUR', 'ben', false)`,
        [
          submissionId,
          claimed.payout_id,
          claimed.account_id,
          token,
          `payout-${claimed.payout_id}`,
          railClientRef(claimed.payout_id),
        ],
      );
    }

    const run = await freshRun(Date.now(), (r) => r.totalViolations === 8);
    const byCheck = Object.fromEntries(run.checks.map((c: any) => [c.check, c]));
    // INV-07 twice for these two rows: neither kept a grant proof (written around the proxy).
    expect(run).toMatchObject({ status: 'violations', totalViolations: 8 });
    expect(byCheck.one_in_flight_payout_per_account).toEqual({
      check: 'one_in_flight_payout_per_account',
      invariant: 'INV-01',
      status: 'violation',
      violations: 1,
      offenders: [{ accountId: crowded, payoutIds: expect.arrayContaining(inFlight) }],
    });
    expect(byCheck.ledger_group_balanced.offenders).toEqual([
      { txnGroupId: badGroup, sumMinor: '7' },
    ]);
    expect(byCheck.balance_equals_ledger.offenders).toEqual([
      {
        accountId: victim,
        balanceMinor: String(OPENING_MINOR),
        ledgerSumMinor: String(OPENING_MINOR + 7),
      },
    ]);
    expect(byCheck.one_live_submission_per_payout).toMatchObject({
      invariant: 'INV-02',
      violations: 1,
      offenders: [{ payoutId: claimed.payout_id, submissionIds: expect.any(Array) }],
    });
    expect(byCheck.submission_token_matches_claim).toMatchObject({
      invariant: 'INV-07',
      violations: 1,
      offenders: [{ submissionId: stray, payoutId: claimed.payout_id, presentedToken: strayToken }],
    });
    expect(byCheck.submission_grant_proven).toMatchObject({
      invariant: 'INV-07',
      violations: 2,
      offenders: expect.arrayContaining([
        expect.objectContaining({ submissionId: unproven, ownerId: 'rogue', reason: 'missing' }),
        expect.objectContaining({
          submissionId: stray,
          presentedToken: strayToken,
          reason: 'missing',
        }),
      ]),
    });
    expect(byCheck.token_regression).toMatchObject({
      invariant: 'INV-04',
      violations: 1,
      offenders: [
        {
          guard: 'account',
          accountId: account.account_id,
          highestSeen: account.fence,
          observed: (BigInt(account.fence) - 1n).toString(),
        },
      ],
    });

    for (const [check, n] of [
      ['one_in_flight_payout_per_account', 1],
      ['ledger_group_balanced', 1],
      ['balance_equals_ledger', 1],
      ['one_live_submission_per_payout', 1],
      ['submission_token_matches_claim', 1],
      ['submission_grant_proven', 2],
      ['token_regression', 1],
    ] as const) {
      expect([
        check,
        await scrapeSeries(
          reconciler.url,
          `reconciler_invariant_violations{check="${check}"}`,
          'throw',
        ),
      ]).toEqual([check, n]);
    }
    // The safety event fires once for the regression, however many runs see it.
    await freshRun(Date.now());
    expect(
      await scrapeSeries(reconciler.url, 'lock_token_regression_total{guard="account"}', 'throw'),
    ).toBe(1);
    const out = reconciler.output();
    expect(out).toContain('"event":"invariant_violation"');
    expect(out).toContain('"event":"token_regression"');
    // Ids go to the log line and the report, never into a metric label.
    const metricsText = (await http('GET', `${reconciler.url}/metrics`)).text;
    expect(metricsText).not.toContain(crowded);
    expect(metricsText).not.toContain(claimed.payout_id);
  });

  it('INV-07 against grants: a submission with a missing, forged or misdirected grant proof is found in one run', async () => {
    const accountId = await newAccount();
    const payoutId = await newPayout(accountId, 300);
    const key = `payout:${accountId}`;
    const token = 9_007_199_254_740_993n; // past 2^53: kept and compared as text
    const genuine = testGrantProof({ key, token, owner: 'worker-z' });
    const [header, , signature] = genuine.split('.');
    const otherClaims = Buffer.from(
      JSON.stringify({ key, tok: String(token), sub: 'worker-y', sid: 's', iat: 1 }),
    ).toString('base64url');
    const forger = SigningKeyRing.open(
      ensureSigningKeys(path.join(scratchDir('forger-'), 'keys.json')).keys,
    );
    const rows: [string, string | null][] = [
      ['fine', genuine],
      ['missing', null],
      ['malformed', 'not-a-jws'],
      // Signed by a key the lock-server never published.
      [
        'unknown-key',
        forger.sign(GRANT_PROOF_TYPE, {
          key,
          tok: String(token),
          sub: 'worker-z',
          sid: 's',
          iat: 1,
        }),
      ],
      // The lock-server's header and signature over claims it never signed.
      ['signature', `${header}.${otherClaims}.${signature}`],
      // Genuine proofs of another grant: another owner, token or account.
      ['owner', testGrantProof({ key, token, owner: 'worker-y' })],
      ['token', testGrantProof({ key, token: token - 1n, owner: 'worker-z' })],
      ['lock-key', testGrantProof({ key: 'payout:someone-else', token, owner: 'worker-z' })],
    ];
    const before = await scrapeSeries(
      reconciler.url,
      'reconciler_detective_findings_total{check="submission_grant_proven"}',
      'throw',
    );
    const ids = new Map<string, string>();
    for (const [reason, proof] of rows) {
      const submissionId = randomUUID();
      ids.set(submissionId, reason);
      await sql(
        proxydb,
        `INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token, owner_id,
           idempotency_key, client_ref, amount_minor, currency, beneficiary_ref, fencing_enforced,
           grant_proof, outcome, error_code, resolved_at)
         VALUES ($1, $2, $3, $4, 'worker-z', $5, $6, 300, 'EUR', 'ben', true, $7,
           'FENCED', 'STALE_TOKEN', now())`,
        [
          submissionId,
          payoutId,
          accountId,
          token.toString(),
          `k-${submissionId}`,
          railClientRef(payoutId),
          proof,
        ],
      );
    }

    const run = await freshRun(Date.now());
    const check = run.checks.find((c: any) => c.check === 'submission_grant_proven');
    const found = check.offenders.filter((o: any) => ids.has(o.submissionId));
    expect(found.map((o: any) => [ids.get(o.submissionId), o.reason]).sort()).toEqual(
      rows
        .filter(([reason]) => reason !== 'fine')
        .map(([reason]) => [reason, reason])
        .sort(),
    );
    expect(found[0]).toMatchObject({
      payoutId,
      accountId,
      presentedToken: token.toString(),
      ownerId: 'worker-z',
    });
    expect(
      await scrapeSeries(
        reconciler.url,
        'reconciler_detective_findings_total{check="submission_grant_proven"}',
        'throw',
      ),
    ).toBe(before + rows.length - 1);
    // One event per submission, when first found; a later run does not count it again.
    const events = reconciler
      .output()
      .split('\n')
      .filter((l) => l.includes('"event":"submission_without_grant"'));
    for (const [submissionId, reason] of ids) {
      const lines = events.filter((l) => l.includes(submissionId));
      expect([reason, lines.length]).toEqual([reason, reason === 'fine' ? 0 : 1]);
    }
    await freshRun(Date.now());
    expect(
      await scrapeSeries(
        reconciler.url,
        'reconciler_detective_findings_total{check="submission_grant_proven"}',
        'throw',
      ),
    ).toBe(before + rows.length - 1);
  });

  it('INV-01 in production: a transition that skips a state or a version gap is found in one run', async () => {
    const accountId = await newAccount();
    const [skipped, gapped, fine] = [
      await newPayout(accountId, 100),
      await newPayout(accountId, 200),
      await newPayout(accountId, 300),
    ];
    const before = await scrapeSeries(
      reconciler.url,
      'reconciler_detective_findings_total{check="claim_history_consistent"}',
      'throw',
    );
    // Each payout's rows in one transaction, as payment-resource writes them: a run in between
    // would see a log that does not end where the payout is.
    const append = `INSERT INTO payout_transition (payout_id, from_state, event, to_state, actor)
                    VALUES ($1, $2, $3, $4, 'rogue')`;
    await withClient(paydb, async (c) => {
      await c.query('BEGIN');
      // PENDING straight to RAIL_SUBMITTED: no claim. The seal numbers it 1, as it should.
      await c.query(append, [skipped, 'PENDING', 'RAIL_SUBMITTED', 'RAIL_SUBMITTED']);
      await c.query(`UPDATE payout SET state = 'RAIL_SUBMITTED' WHERE payout_id = $1`, [skipped]);
      // A valid first step, then the second numbered 3 (the seal switched off for it).
      await c.query(append, [gapped, 'PENDING', 'CLAIM', 'CLAIMED']);
      await c.query(`ALTER TABLE payout_transition DISABLE TRIGGER payout_transition_seal`);
      await c.query(
        `INSERT INTO payout_transition (payout_id, from_state, to_state, event, actor, chain_seq, chain_hash)
         VALUES ($1, 'CLAIMED', 'RAIL_SUBMITTED', 'RAIL_SUBMITTED', 'rogue', 3, repeat('0', 64))`,
        [gapped],
      );
      await c.query(`ALTER TABLE payout_transition ENABLE ALWAYS TRIGGER payout_transition_seal`);
      await c.query(`UPDATE payout SET state = 'RAIL_SUBMITTED' WHERE payout_id = $1`, [gapped]);
      // A consistent one beside them: nothing to report.
      await c.query(append, [fine, 'PENDING', 'ABANDON', 'ABANDONED']);
      await c.query(`UPDATE payout SET state = 'ABANDONED' WHERE payout_id = $1`, [fine]);
      await c.query('COMMIT');
    });

    const run = await freshRun(Date.now());
    const check = run.checks.find((c: any) => c.check === 'claim_history_consistent');
    expect(check).toMatchObject({ invariant: 'INV-01', status: 'violation' });
    const mine = (id: string) => check.offenders.find((o: any) => o.payoutId === id);
    expect(mine(skipped)).toMatchObject({
      problem: 'not_in_state_machine',
      state: 'RAIL_SUBMITTED',
      expected: 'no RAIL_SUBMITTED from PENDING',
      found: 'PENDING -RAIL_SUBMITTED-> RAIL_SUBMITTED',
    });
    expect(mine(gapped)).toMatchObject({ problem: 'version_gap', expected: '2', found: '3' });
    expect(mine(fine)).toBeUndefined();
    expect(
      await scrapeSeries(
        reconciler.url,
        'reconciler_detective_findings_total{check="claim_history_consistent"}',
        'throw',
      ),
    ).toBe(before + 2);
    const events = reconciler
      .output()
      .split('\n')
      .filter((l) => l.includes('"event":"claim_history_inconsistent"'));
    expect(events.filter((l) => l.includes(skipped))).toHaveLength(1);
    expect(events.filter((l) => l.includes(gapped))).toHaveLength(1);
  });
});
