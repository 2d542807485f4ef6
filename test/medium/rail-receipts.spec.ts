import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { ensureSigningKeys, SigningKeyRing } from '@dlock/identity';
import { LockClient, type LockHandle } from '@dlock/lock-client';
import {
  PaymentResourceClient,
  payoutLockKey,
  RAIL_RECEIPT_TYPE,
  railClientRef,
  RailProxyClient,
  receiptClaims,
  type AckedSubmission,
  type SubmitRequest,
} from '@dlock/payout-contract';
import { DlockError } from '@dlock/lock-api';
import {
  DEV_POLICY_PATH,
  http,
  migratedDatabase,
  seedFundedAccount,
  seedPendingPayout,
  spawnApp,
  tableSnapshot,
  testTokenProvider,
  withClient,
  type HttpResult,
  type RunningApp,
  scratchDir,
} from '@dlock/testing';

/**
 * Outcomes are proofs too (docs/rail.md, "Receipts"; docs/security.md,
 * "Attacks tried"): payment-resource moves a payout on what the rail did only
 * with the rail-proxy's signed receipt of it. Each attack is tried with a
 * genuine grant and a genuine executor token against real processes, and
 * must leave the payout, the ledger, the proxy and the rail as they were; the
 * honest path still pays once.
 */
jest.setTimeout(180_000);

const WORKER = 'executor-1';
const RESOLVER = 'reconciler';
const apps: RunningApp[] = [];
const clients: { close(): unknown }[] = [];
let lockServer: RunningApp;
let payments: RunningApp;
let proxy: RunningApp;
let stub: RunningApp;
let dbs: { paydb: string; proxydb: string };

beforeAll(async () => {
  const [lockdb, paydb, proxydb] = await Promise.all([
    migratedDatabase('lockdb'),
    migratedDatabase('paydb'),
    migratedDatabase('proxydb'),
  ]);
  dbs = { paydb, proxydb };
  const policy = { AUTH_POLICY: DEV_POLICY_PATH };
  [lockServer, payments, stub] = await Promise.all([
    spawnApp('lock-server', { ...policy, LOCK_BACKEND: 'pg', LOCKDB_URL: lockdb }),
    spawnApp('payment-resource', { ...policy, PAYDB_URL: paydb }),
    spawnApp('rail-stub', {
      RAIL_STUB_LATENCY_MS: '0',
      RAIL_STUB_JOURNAL_PATH: path.join(scratchDir('receipts-stub-'), 'j.jsonl'),
      RAIL_STUB_JOURNAL_FSYNC: 'false',
    }),
  ]);
  proxy = await spawnApp('rail-proxy', {
    ...policy,
    PROXYDB_URL: proxydb,
    RAIL_STUB_URL: stub.url,
  });
  apps.push(lockServer, payments, stub, proxy);
});

afterAll(async () => {
  for (const c of clients) c.close();
  await Promise.all(apps.map((a) => a.stop()));
});

async function grantOf(owner: string, accountId: string): Promise<LockHandle> {
  const client = new LockClient({
    baseUrl: lockServer.url,
    ownerId: owner,
    token: testTokenProvider(owner),
  });
  const session = await client.openSession();
  clients.push({ close: () => session.close() });
  return session.acquire(payoutLockKey(accountId));
}

function paymentsAs(owner: string): PaymentResourceClient {
  const c = new PaymentResourceClient(
    payments.url,
    owner,
    testTokenProvider(owner, 'payment-resource'),
  );
  clients.push(c);
  return c;
}

function proxyAs(owner: string): RailProxyClient {
  const budget = { connectTimeoutMs: 1_000, readTimeoutMs: 5_000 };
  const c = new RailProxyClient(proxy.url, owner, budget, testTokenProvider(owner, 'rail-proxy'));
  clients.push(c);
  return c;
}

/** A payout of 100 on a funded account, claimed and marked RAIL_SUBMITTED under a genuine grant. */
async function submittedPayout() {
  const accountId = await seedFundedAccount(dbs.paydb);
  const payoutId = await seedPendingPayout(dbs.paydb, accountId, 100);
  const handle = await grantOf(WORKER, accountId);
  const pay = paymentsAs(WORKER);
  await pay.claim(payoutId, handle.fence, 'PENDING');
  const { railInstruction } = await pay.markSubmitted(payoutId, handle.fence);
  const record = await pay.get(payoutId);
  const payout: SubmitRequest = {
    payoutId,
    accountId,
    amountMinor: 100,
    currency: 'EUR',
    beneficiaryRef: record.beneficiaryRef,
  };
  const submit = () => proxyAs(WORKER).submit(handle.fence, railInstruction, payout);
  return { accountId, payoutId, handle, pay, payout, submit };
}

/** A write at payment-resource sent by hand, with the genuine grant and exactly the receipt given. */
function writeByHand(
  action: 'rail-outcome' | 'post' | 'resolve',
  payoutId: string,
  handle: LockHandle,
  owner: string,
  body: object,
  receipt?: string,
): Promise<HttpResult> {
  const headers: Record<string, string> = {
    'x-owner-id': owner,
    'x-fencing-token': handle.fencingToken.toString(),
    'x-grant-proof': handle.grantProof,
    'x-idempotency-key': `${action}-${randomUUID()}`,
  };
  if (receipt !== undefined) headers['x-rail-receipt'] = receipt;
  return http('POST', `${payments.url}/v1/payouts/${payoutId}/${action}`, { headers, body });
}

/** Signed with a key no service trusts: what an attacker can sign with. */
function forgedReceipt(payoutId: string, accountId: string, token: bigint): string {
  const ring = SigningKeyRing.open(
    ensureSigningKeys(path.join(scratchDir('receipts-foreign-'), 'keys.json')).keys,
  );
  const submission = {
    payoutId,
    submissionId: randomUUID(),
    accountId,
    amountMinor: 100,
    currency: 'EUR',
    beneficiaryRef: 'x',
    presentedToken: token,
    ownerId: WORKER,
  };
  return ring.sign(
    RAIL_RECEIPT_TYPE,
    receiptClaims(payoutId, submission, { out: 'ACKED', ref: 'made-up', atMs: Date.now() }),
  );
}

function expectRefused(res: HttpResult, reason: string, field?: string): void {
  const details = res.body?.details ?? {};
  expect([res.status, res.body?.code, details.proof, details.reason, details.field]).toEqual([
    403,
    'PROOF_REJECTED',
    'receipt',
    reason,
    field,
  ]);
}

/** The payout's row, its account and ledger, the proxy's records and the rail's counters. */
async function everything(): Promise<Record<string, unknown>> {
  const stats = (await http('GET', `${stub.url}/admin/stats`)).body;
  return {
    paydb: await tableSnapshot(dbs.paydb, ['payout', 'account', 'ledger_entry']),
    proxydb: await tableSnapshot(dbs.proxydb, ['rail_submission']),
    booked: stats.transfersAccepted,
  };
}

async function balanceOf(accountId: string): Promise<number> {
  return withClient(dbs.paydb, async (c) => {
    const r = await c.query<{ b: string }>(
      'SELECT balance_minor::text AS b FROM account WHERE account_id = $1',
      [accountId],
    );
    return Number(r.rows[0].b);
  });
}

async function transfersOf(payoutId: string): Promise<number> {
  const res = await http('GET', `${stub.url}/lookup?clientRef=${railClientRef(payoutId)}`);
  return (res.body.transfers as unknown[]).length;
}

let honestAck: AckedSubmission;

describe('a worker’s report of the rail moves nothing without the proxy’s receipt', () => {
  it('the honest payout: the proxy answers a receipt, the ledger moves on it, once', async () => {
    const p = await submittedPayout();
    const before = await balanceOf(p.accountId);
    const ack = await p.submit();
    expect(ack.railReceipt).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    await p.pay.railOutcome(p.payoutId, p.handle.fence, { outcome: 'ACKED', ...ack });
    expect((await p.pay.post(p.payoutId, p.handle.fence, ack)).state).toBe('POSTED');
    expect(await balanceOf(p.accountId)).toBe(before - 100);
    expect(await transfersOf(p.payoutId)).toBe(1);
    await p.handle.release();
    honestAck = ack;
  });

  it('ACKED for a submission the proxy never made is refused, whatever receipt comes with it', async () => {
    const p = await submittedPayout();
    const before = await everything();
    const made = { outcome: 'ACKED', submissionId: randomUUID(), railReference: 'made-up' };
    const post = {
      railOutcome: 'ACKED',
      submissionId: made.submissionId,
      railReference: 'made-up',
    };
    const send = (action: 'rail-outcome' | 'post', body: object, receipt?: string) =>
      writeByHand(action, p.payoutId, p.handle, WORKER, body, receipt);
    expectRefused(await send('rail-outcome', made), 'missing');
    const forged = forgedReceipt(p.payoutId, p.accountId, p.handle.fencingToken);
    expectRefused(await send('rail-outcome', made, forged), 'unknown-key');
    // A genuine receipt, of another payout the proxy really paid.
    const other = {
      ...made,
      submissionId: honestAck.submissionId,
      railReference: honestAck.railReference,
    };
    expectRefused(await send('rail-outcome', other, honestAck.railReceipt), 'mismatch', 'payoutId');
    // And P3 from RAIL_SUBMITTED is no transition at all, whatever it carries.
    expect((await send('post', post, honestAck.railReceipt)).body.code).toBe(
      'PAYOUT_NOT_CLAIMABLE',
    );
    expect(await everything()).toEqual(before);
    expect((await p.pay.get(p.payoutId)).state).toBe('RAIL_SUBMITTED');
    expect(await transfersOf(p.payoutId)).toBe(0);
    await p.handle.release();
  });

  it('a payout the rail paid cannot be recorded REJECTED: the books follow the money', async () => {
    const p = await submittedPayout();
    const funded = await balanceOf(p.accountId);
    const ack = await p.submit();
    expect(await transfersOf(p.payoutId)).toBe(1);
    const before = await everything();
    const declined = {
      outcome: 'REJECTED',
      submissionId: ack.submissionId,
      reason: 'made up decline',
    };
    expectRefused(
      await writeByHand('rail-outcome', p.payoutId, p.handle, WORKER, declined),
      'missing',
    );
    // The genuine receipt says ACKED: it cannot stand for a decline.
    expectRefused(
      await writeByHand('rail-outcome', p.payoutId, p.handle, WORKER, declined, ack.railReceipt),
      'mismatch',
      'outcome',
    );
    expect(await everything()).toEqual(before);
    await p.pay.railOutcome(p.payoutId, p.handle.fence, { outcome: 'ACKED', ...ack });
    // RAIL_ACKED: the post, too, moves the ledger only on this payout's receipt.
    const post = {
      railOutcome: 'ACKED',
      submissionId: ack.submissionId,
      railReference: ack.railReference,
    };
    const acked = await everything();
    expectRefused(await writeByHand('post', p.payoutId, p.handle, WORKER, post), 'missing');
    expectRefused(
      await writeByHand('post', p.payoutId, p.handle, WORKER, post, honestAck.railReceipt),
      'mismatch',
      'payoutId',
    );
    expect(await everything()).toEqual(acked);
    await p.pay.post(p.payoutId, p.handle.fence, ack);
    expect(await balanceOf(p.accountId)).toBe(funded - 100);
    await p.handle.release();
  });

  it('a rail decline carries the proxy’s REJECTED receipt: FAILED on it, never ACKED with it', async () => {
    await http('POST', `${stub.url}/admin/faults`, { body: { declineRate: 1 } });
    const p = await submittedPayout();
    let declined: DlockError | undefined;
    try {
      await p.submit();
    } catch (err) {
      declined = err as DlockError;
    } finally {
      await http('POST', `${stub.url}/admin/faults`, { body: { declineRate: 0 } });
    }
    const details = declined?.details ?? {};
    expect([declined?.code, details.outcome]).toEqual(['VALIDATION_FAILED', 'REJECTED']);
    const receipt = details.railReceipt as string;
    const submissionId = details.submissionId as string;
    const acked = { outcome: 'ACKED', submissionId, railReference: 'made-up' };
    expectRefused(
      await writeByHand('rail-outcome', p.payoutId, p.handle, WORKER, acked, receipt),
      'mismatch',
      'outcome',
    );
    await p.pay.railOutcome(p.payoutId, p.handle.fence, {
      outcome: 'REJECTED',
      submissionId,
      reason: 'declined',
      railReceipt: receipt,
    });
    expect((await p.pay.get(p.payoutId)).state).toBe('FAILED');
    await p.handle.release();
  });
});

describe('RAIL_AMBIGUOUS is resolved on the rail’s record as the proxy receipted it (R3)', () => {
  it('NOT_FOUND needs a receipt read after the quarantine; ACKED cannot be resolved on it', async () => {
    const p = await submittedPayout();
    const evidence = proxyAs(RESOLVER);
    // Read before the quarantine: the rail had nothing then, which proves nothing after.
    const early = await evidence.evidence(p.payoutId);
    expect([early.lookup.transfers.length, typeof early.railReceipt]).toEqual([0, 'string']);
    await p.pay.railOutcome(p.payoutId, p.handle.fence, { outcome: 'AMBIGUOUS', reason: 'test' });
    await p.handle.release();
    const handle = await grantOf(RESOLVER, p.accountId);
    const resolve = (body: object, receipt?: string) =>
      writeByHand('resolve', p.payoutId, handle, RESOLVER, body, receipt);
    const notFound = { resolution: 'NOT_FOUND', evidence: 'rail lookup: no transfer' };
    const before = await everything();
    expectRefused(await resolve(notFound), 'missing');
    expectRefused(await resolve(notFound, early.railReceipt!), 'mismatch', 'at');
    const now = await evidence.evidence(p.payoutId);
    expectRefused(
      await resolve(
        { ...notFound, resolution: 'ACKED', railReference: 'made-up' },
        now.railReceipt!,
      ),
      'mismatch',
      'outcome',
    );
    expect(await everything()).toEqual(before);
    expect((await resolve(notFound, now.railReceipt!)).body.state).toBe('FAILED');
    await handle.release();
  });
});
