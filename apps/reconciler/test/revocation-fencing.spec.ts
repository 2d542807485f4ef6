import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { LockClient, type LockSession } from '@dlock/lock-client';
import {
  http,
  migratedDatabase,
  readerUrl,
  seedFundedAccount,
  seedPendingPayout,
  spawnApp,
  startEtcd,
  waitFor,
  withClient,
  type EtcdCluster,
  type RunningApp,
  testTokenProvider,
  testRevocationNotice,
  scratchDir,
  scrapeSeries,
} from '@dlock/testing';

/**
 * Revocation fencing and the token-source probe, over real processes and real
 * PostgreSQL: after an operator revokes a payout lock, one reconciler pass
 * raises the account's fence (payment-resource) and high-water mark
 * (rail-proxy) to the revocation's floor, so the revoked holder's next write
 * is FENCED_OUT at both guards with no new holder involved. A guard above the
 * lock token source (a rewound lockdb) is reported as token_regression.
 * Run once per lock backend: pg lists lock_revocation, etcd its revocation
 * records, behind the same GET /v1/revocations.
 */

const WORKER = 'worker-revoked';
const TRACE = '0af7651916cd43dd8448eb211c80319c';
const TRACE_ID = expect.stringMatching(/^[0-9a-f]{32}$/);

let etcd: EtcdCluster | undefined;
let paydb: string;
let proxydb: string;
let lockServer: RunningApp;
let payments: RunningApp;
let stub: RunningApp;
let proxy: RunningApp;
let reconciler: RunningApp;
let session: LockSession;

async function sql<T = Record<string, unknown>>(url: string, text: string, params: unknown[] = []) {
  return withClient(url, async (c) => (await c.query(text, params)).rows as T[]);
}

function spawnProxy(port?: number): Promise<RunningApp> {
  return spawnApp(
    'rail-proxy',
    {
      PROXYDB_URL: proxydb,
      RAIL_STUB_URL: stub.url,
      RAIL_CONNECT_TIMEOUT_MS: '500',
      RAIL_READ_TIMEOUT_MS: '2000',
    },
    port === undefined ? {} : { port },
  );
}

function fencedWrite(payoutId: string, op: string, token: bigint, body: unknown) {
  return http('POST', `${payments.url}/v1/payouts/${payoutId}/${op}`, {
    headers: {
      'x-fencing-token': token.toString(),
      'x-owner-id': WORKER,
      'x-idempotency-key': `payout-${payoutId}`,
    },
    body,
  });
}

function railSubmit(payoutId: string, accountId: string, token: bigint) {
  return http('POST', `${proxy.url}/v1/rail/submissions`, {
    headers: {
      'x-fencing-token': token.toString(),
      'x-owner-id': WORKER,
      'x-idempotency-key': `payout-${payoutId}`,
      traceparent: `00-${TRACE}-00f067aa0ba902b7-01`,
    },
    body: { payoutId, accountId, amountMinor: 1_000, currency: 'EUR', beneficiaryRef: 'ben-1' },
  });
}

/** Waits until a counter reached `atLeast`: the reconciler pass that did it has run. */
async function counterReaches(app: RunningApp, line: string, atLeast: number): Promise<void> {
  await waitFor(
    async () => (await scrapeSeries(app.url, line, 'throw')) >= atLeast,
    20_000,
    `${line} >= ${atLeast}`,
  );
}

/** Waits for `n` whole fencing passes that started after this call. */
async function fencingPassesAfterNow(n: number): Promise<void> {
  const passes = 'reconciler_pass_seconds_count{loop="fencing"}';
  // +1: the pass in flight may have read the revocations before the caller's change.
  await counterReaches(
    reconciler,
    passes,
    (await scrapeSeries(reconciler.url, passes, 'throw')) + n + 1,
  );
}

async function accountFence(accountId: string): Promise<string> {
  const rows = await sql<{ fence: string }>(
    paydb,
    `SELECT fence::text AS fence FROM account WHERE account_id = $1`,
    [accountId],
  );
  return rows[0].fence;
}

async function highWater(accountId: string): Promise<string | null> {
  const rows = await sql<{ highest_token: string }>(
    proxydb,
    `SELECT highest_token::text AS highest_token FROM rail_high_water WHERE account_id = $1`,
    [accountId],
  );
  return rows[0]?.highest_token ?? null;
}

async function revoke(key: string, token: bigint) {
  const res = await http('POST', `${lockServer.url}/v1/locks/${key}/revoke`, {
    body: { operator: 'ops-jane', reason: 'stuck worker, OPS-19', expectedToken: token.toString() },
  });
  expect(res.status).toBe(200);
  return res.body as { revokedToken: string; newTokenFloor: string; revocationId: string };
}

/** A worker's grant and claim: the account fence now equals its token, for this payout. */
async function claimedPayout() {
  const accountId = await seedFundedAccount(paydb, 100_000);
  const payoutId = await seedPendingPayout(paydb, accountId, 1_000);
  const lock = await session.acquire(`payout:${accountId}`);
  const token = lock.fencingToken;
  const claim = await fencedWrite(payoutId, 'claim', token, { expectedState: 'PENDING' });
  expect(claim.status).toBe(200);
  return { accountId, payoutId, token, lock };
}

/** The lock token source under test: lockdb's sequence (pg) or etcd's revision. */
async function spawnLockServer(backend: 'pg' | 'etcd'): Promise<RunningApp> {
  if (backend === 'pg') {
    return spawnApp('lock-server', {
      LOCK_BACKEND: 'pg',
      LOCKDB_URL: await migratedDatabase('lockdb'),
    });
  }
  etcd = await startEtcd({ label: 'revocation-fencing' });
  return spawnApp('lock-server', {
    LOCK_BACKEND: 'etcd',
    ETCD_ENDPOINTS: etcd.endpoints.join(','),
  });
}

describe.each(['pg', 'etcd'] as const)('lock backend %s', (backend) => {
  beforeAll(async () => {
    [paydb, proxydb] = await Promise.all([migratedDatabase('paydb'), migratedDatabase('proxydb')]);
    [lockServer, payments, stub] = await Promise.all([
      spawnLockServer(backend),
      spawnApp('payment-resource', { PAYDB_URL: paydb }),
      spawnApp('rail-stub', {
        RAIL_STUB_JOURNAL_PATH: path.join(scratchDir('fence-stub-'), 'j.jsonl'),
        RAIL_STUB_JOURNAL_FSYNC: 'false',
      }),
    ]);
    proxy = await spawnProxy();
    reconciler = await spawnApp('reconciler', {
      LOCK_SERVER_URL: lockServer.url,
      PAYMENT_RESOURCE_URL: payments.url,
      RAIL_STUB_URL: stub.url,
      RAIL_PROXY_URL: proxy.url,
      PAYDB_URL: readerUrl(paydb),
      PROXYDB_URL: readerUrl(proxydb),
      OWNER_ID: 'reconciler-test',
      RECONCILER_FENCING_INTERVAL_MS: '200',
      // Settled at once, so the cursor passes each test's revocation when done
      // (the settle rule itself: revocation-cursor.rules.spec.ts).
      RECONCILER_REVOCATION_SETTLE_MS: '0',
    });
    session = await new LockClient({
      baseUrl: lockServer.url,
      ownerId: WORKER,
      token: testTokenProvider(WORKER),
    }).openSession();
  }, 90_000);

  afterAll(async () => {
    await session?.close();
    await Promise.all([reconciler, proxy, payments, stub, lockServer].map((app) => app?.stop()));
    await etcd?.stop();
    etcd = undefined;
  });

  describe('revocation fencing: revoke fences the evicted holder at once', () => {
    it('acquire -> claim -> revoke; one pass later the old token is FENCED_OUT at payment-resource and the proxy', async () => {
      const { accountId, payoutId, token } = await claimedPayout();
      // Before the revoke the claim's own continuation is admitted (fence = token, same payout).
      expect(await accountFence(accountId)).toBe(token.toString());

      const revoked = await revoke(`payout:${accountId}`, token);
      expect(revoked.revokedToken).toBe(token.toString());
      await fencingPassesAfterNow(1);
      const submitsBefore = (await http('GET', `${stub.url}/stats`)).body.submitsReceived as number;
      const outcome = await fencedWrite(payoutId, 'rail-outcome', token, {
        outcome: 'SUBMITTED',
        submissionId: randomUUID(),
      });
      expect(outcome.status).toBe(409);
      expect(outcome.body).toMatchObject({
        code: 'FENCED_OUT',
        retrySafe: false,
        details: { presentedToken: token.toString(), highestToken: revoked.newTokenFloor },
      });
      const submit = await railSubmit(payoutId, accountId, token);
      expect(submit.status).toBe(409);
      expect(submit.body).toMatchObject({
        code: 'FENCED_OUT',
        retrySafe: false,
        details: { presentedToken: token.toString(), highestToken: revoked.newTokenFloor },
      });
      expect((await http('GET', `${stub.url}/stats`)).body.submitsReceived).toBe(submitsBefore);
      expect(await accountFence(accountId)).toBe(revoked.newTokenFloor);
      expect(await highWater(accountId)).toBe(revoked.newTokenFloor);
      // Each guard audited its raise.
      expect(payments.output()).toContain('"event":"fence_floor_raised"');
      expect(proxy.output()).toContain('"event":"fence_floor_raised"');
      expect(payments.output()).toContain(revoked.revocationId);
    });

    it('a guard that is down keeps the revocation pending; the next pass after it returns raises it', async () => {
      const errors = 'reconciler_fence_floor_raises_total{guard="rail",result="error"}';
      const errorsBefore = await scrapeSeries(reconciler.url, errors, 'throw');
      const port = proxy.port;
      await proxy.stop();
      let revoked: Awaited<ReturnType<typeof revoke>>;
      let held: Awaited<ReturnType<typeof claimedPayout>>;
      try {
        held = await claimedPayout();
        revoked = await revoke(`payout:${held.accountId}`, held.token);
        // A whole pass after the revoke: paydb raised, the proxy's raise failed and stays pending.
        await fencingPassesAfterNow(1);
        expect(await scrapeSeries(reconciler.url, 'reconciler_revocations_unfenced', 'throw')).toBe(
          1,
        );
        expect(await scrapeSeries(reconciler.url, errors, 'throw')).toBeGreaterThan(errorsBefore);
        expect(await accountFence(held.accountId)).toBe(revoked.newTokenFloor);
        expect(await highWater(held.accountId)).toBeNull();
      } finally {
        proxy = await spawnProxy(port);
      }
      await waitFor(
        async () =>
          (await scrapeSeries(reconciler.url, 'reconciler_revocations_unfenced', 'throw')) === 0,
        20_000,
        'no revocation left unfenced',
      );
      expect(await highWater(held.accountId)).toBe(revoked.newTokenFloor);
      const submit = await railSubmit(held.payoutId, held.accountId, held.token);
      expect(submit.status).toBe(409);
      expect(submit.body.code).toBe('FENCED_OUT');
    });

    it('a non-payout key is left alone', async () => {
      const before = await scrapeSeries(
        reconciler.url,
        'reconciler_fence_floor_raises_total{guard="rail",result="raised"}',
        'throw',
      );
      const lock = await session.acquire('batch:nightly');
      await revoke('batch:nightly', lock.fencingToken);
      await fencingPassesAfterNow(1);
      expect(
        await scrapeSeries(
          reconciler.url,
          'reconciler_fence_floor_raises_total{guard="rail",result="raised"}',
          'throw',
        ),
      ).toBe(before);
    });
  });

  describe('fence-floor endpoints (operator/reconciler only)', () => {
    /** The body with a genuine notice over its floor, as a revocation would give (a valid floor only). */
    const noticed = (accountId: string, body: unknown): unknown => {
      const { floor, revocationId } = body as { floor?: unknown; revocationId?: string };
      if (typeof floor !== 'string' || !/^[1-9][0-9]{0,17}$/.test(floor)) return body;
      const key = `payout:${accountId}`;
      return { ...(body as object), notice: testRevocationNotice({ key, floor, revocationId }) };
    };
    const raiseFence = (accountId: string, body: unknown, operator: string | null = 'ops-jane') =>
      http('POST', `${payments.url}/v1/accounts/${accountId}/fence-floor`, {
        headers: operator === null ? {} : { 'x-operator': operator },
        body: noticed(accountId, body),
      });
    const raiseMark = (accountId: string, body: unknown, operator: string | null = 'ops-jane') =>
      http('POST', `${proxy.url}/v1/rail/high-water/${accountId}/floor`, {
        headers: operator === null ? {} : { 'x-operator': operator },
        body: noticed(accountId, body),
      });

    it('raising to the fence a holder already set cuts its equal-token continuation', async () => {
      const { accountId, payoutId, token, lock } = await claimedPayout();
      const res = await raiseFence(accountId, { floor: token.toString() });
      const outcome = await fencedWrite(payoutId, 'rail-outcome', token, {
        outcome: 'SUBMITTED',
        submissionId: randomUUID(),
      });
      expect(outcome.status).toBe(409);
      expect(outcome.body.code).toBe('FENCED_OUT');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        accountId,
        floor: token.toString(),
        fenceBefore: token.toString(),
        fenceAfter: token.toString(),
        raised: true,
      });
      await lock.release();
    });

    // Floors stay far below the tokens already minted, so the token-source probe stays quiet.
    it('is idempotent: a floor already passed is a 200 no-op at both guards', async () => {
      const accountId = await seedFundedAccount(paydb, 1_000);
      expect((await raiseFence(accountId, { floor: '3' })).body).toMatchObject({ raised: true });
      const again = await raiseFence(accountId, { floor: '2', revocationId: randomUUID() });
      expect(again.status).toBe(200);
      expect(again.body).toEqual({
        accountId,
        floor: '2',
        fenceBefore: '3',
        fenceAfter: '3',
        raised: false,
      });
      expect((await raiseMark(accountId, { floor: '3' })).body).toEqual({
        accountId,
        floor: '3',
        highestTokenBefore: null,
        highestTokenAfter: '3',
        raised: true,
      });
      const mark = await raiseMark(accountId, { floor: '3' });
      expect(mark.status).toBe(200);
      expect(mark.body).toEqual({
        accountId,
        floor: '3',
        highestTokenBefore: '3',
        highestTokenAfter: '3',
        raised: false,
      });
    });

    it('an unknown account is 404 at payment-resource', async () => {
      const res = await raiseFence('acct-nobody', { floor: '5' });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ code: 'NOT_FOUND', retrySafe: false });
    });

    it.each([
      ['a leading zero', 'acct-x', { floor: '05' }, 'ops', 'floor'],
      ['an int64 overflow', 'acct-x', { floor: '9223372036854775808' }, 'ops', 'floor'],
      ['a zero floor', 'acct-x', { floor: '0' }, 'ops', 'floor'],
      ['a bad account id', 'bad%20id', { floor: '5' }, 'ops', 'accountId'],
      ['no X-Operator', 'acct-x', { floor: '5' }, null, 'X-Operator'],
    ])(
      '%s is 400 VALIDATION_FAILED at both guards, nothing changed',
      async (_, id, body, op, field) => {
        for (const send of [raiseFence, raiseMark]) {
          const res = await send(id, body, op);
          expect(res.status).toBe(400);
          expect(res.body).toEqual({
            code: 'VALIDATION_FAILED',
            message: expect.any(String),
            retrySafe: false,
            details: { fields: [{ field, message: expect.any(String) }] },
            traceId: TRACE_ID,
          });
        }
        expect(await highWater('acct-x')).toBeNull();
      },
    );

    it.each([
      ['a number floor', { floor: 5 }],
      ['an unknown field', { floor: '5', extra: 1 }],
    ])('%s is 400 VALIDATION_FAILED', async (_, body) => {
      for (const send of [raiseFence, raiseMark]) {
        const res = await send('acct-x', body);
        expect(res.status).toBe(400);
        expect(res.body.code).toBe('VALIDATION_FAILED');
      }
    });
  });

  describe('token source behind the guards (a rewound lockdb)', () => {
    it('one pass reports token_regression (guard lock_source) when a guard holds a value above the source', async () => {
      const behind = 'lock_token_regression_total{guard="lock_source"}';
      // Never counted so far (the series is there at 0 from the start).
      expect(await scrapeSeries(reconciler.url, behind, 'throw')).toBe(0);
      expect(
        await scrapeSeries(
          reconciler.url,
          'reconciler_token_probe_total{result="behind"}',
          'throw',
        ),
      ).toBe(0);
      expect(await scrapeSeries(reconciler.url, 'reconciler_token_source_behind', 'throw')).toBe(0);
      // What a lockdb restored from an old backup looks like from the guards:
      // they hold a token the source has not minted yet.
      const accountId = await seedFundedAccount(paydb, 1_000);
      await sql(paydb, `UPDATE account SET fence = 1000000000000 WHERE account_id = $1`, [
        accountId,
      ]);
      await counterReaches(reconciler, behind, 1);
      expect(await scrapeSeries(reconciler.url, 'reconciler_token_source_behind', 'throw')).toBe(1);
      const out = reconciler.output();
      expect(out).toContain('"event":"token_regression"');
      expect(out).toContain('"guard":"lock_source"');
      expect(out).toContain('"highestToken":"1000000000000"');
      const metricsText = (await http('GET', `${reconciler.url}/metrics`)).text;
      expect(metricsText).not.toContain(accountId);
    });
  });
});
