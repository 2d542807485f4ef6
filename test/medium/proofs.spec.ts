import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { ensureSigningKeys, SigningKeyRing } from '@dlock/identity';
import { GRANT_PROOF_TYPE } from '@dlock/lock-api';
import { LockClient, type LockHandle } from '@dlock/lock-client';
import {
  PaymentResourceClient,
  payoutLockKey,
  PAYOUT_INSTRUCTION_TYPE,
  railClientRef,
  RailProxyClient,
  type SubmitRequest,
} from '@dlock/payout-contract';
import {
  DEV_POLICY_PATH,
  http,
  migratedDatabase,
  payoutFencePoints,
  seedFundedAccount,
  seedPendingPayout,
  spawnApp,
  startEtcd,
  tableSnapshot,
  testTokenProvider,
  withClient,
  type HttpResult,
  type RunningApp,
  scratchDir,
  scrapeSeries,
} from '@dlock/testing';

/**
 * Proofs, not claims (docs/security.md, "Signed grants"; docs/rail.md,
 * "Instructions"): what moves money or blocks a key is something the caller
 * must prove. Each case is an attack tried from outside with one valid
 * executor token (`executor-9`, under the development policy), against real
 * processes: on the build before these proofs every one of them succeeded.
 */
jest.setTimeout(180_000);

const ATTACKER = 'executor-9';
const HONEST = 'executor-1';
const apps: RunningApp[] = [];
const clients: { close(): unknown }[] = [];
let lockServer: RunningApp;
let payments: RunningApp;
let proxy: RunningApp;
let stub: RunningApp;
let dbs: { lockdb: string; paydb: string; proxydb: string };

beforeAll(async () => {
  const [lockdb, paydb, proxydb] = await Promise.all([
    migratedDatabase('lockdb'),
    migratedDatabase('paydb'),
    migratedDatabase('proxydb'),
  ]);
  dbs = { lockdb, paydb, proxydb };
  const policy = { AUTH_POLICY: DEV_POLICY_PATH };
  [lockServer, payments, stub] = await Promise.all([
    spawnApp('lock-server', { ...policy, LOCK_BACKEND: 'pg', LOCKDB_URL: lockdb }),
    spawnApp('payment-resource', { ...policy, PAYDB_URL: paydb }),
    // Its own journal: the default one under $TMPDIR is shared by every run on the machine, and
    // the stub reads all of it at start (docs/rail.md).
    spawnApp('rail-stub', {
      RAIL_STUB_LATENCY_MS: '0',
      RAIL_STUB_JOURNAL_PATH: path.join(scratchDir('proofs-stub-'), 'j.jsonl'),
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

/** A genuine grant of `payout:{accountId}` to `owner`, through the SDK as a worker gets one. */
async function grantOf(
  owner: string,
  accountId: string,
  server: RunningApp = lockServer,
): Promise<LockHandle> {
  const client = new LockClient({
    baseUrl: server.url,
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

/** A key ring no service trusts: what an attacker can sign with. */
function foreignRing(): SigningKeyRing {
  const dir = scratchDir('dlock-foreign-keys-');
  return SigningKeyRing.open(ensureSigningKeys(path.join(dir, 'keys.json')).keys);
}

/** A submission sent by hand, as the attacker would, with exactly the proofs given. */
function submitByHand(
  owner: string,
  token: string,
  body: SubmitRequest,
  proofs: { grant?: string; instruction?: string } = {},
): Promise<HttpResult> {
  const headers: Record<string, string> = {
    'x-owner-id': owner,
    'x-fencing-token': token,
    'x-idempotency-key': `payout-${body.payoutId}`,
  };
  if (proofs.grant !== undefined) headers['x-grant-proof'] = proofs.grant;
  if (proofs.instruction !== undefined) headers['x-payout-instruction'] = proofs.instruction;
  return http('POST', `${proxy.url}/v1/rail/submissions`, { headers, body, noProof: true });
}

function claimByHand(owner: string, payoutId: string, token: string, grant?: string) {
  const headers: Record<string, string> = {
    'x-owner-id': owner,
    'x-fencing-token': token,
    'x-idempotency-key': `payout-${payoutId}`,
  };
  if (grant !== undefined) headers['x-grant-proof'] = grant;
  return http('POST', `${payments.url}/v1/payouts/${payoutId}/claim`, {
    headers,
    body: { expectedState: 'PENDING' },
    noProof: true,
  });
}

function expectRefused(res: HttpResult, proof: string, reason: string): void {
  expect([res.status, res.body?.code, res.body?.details?.proof, res.body?.details?.reason]).toEqual(
    [403, 'PROOF_REJECTED', proof, reason],
  );
}

/** What the rail booked and what the proxy holds: an attack must leave both as they were. */
async function railAndProxy(): Promise<{ booked: number; received: number; proxydb: string }> {
  const stats = (await http('GET', `${stub.url}/admin/stats`)).body;
  return {
    booked: stats.transfersAccepted,
    received: stats.submitsReceived,
    proxydb: await tableSnapshot(dbs.proxydb, ['rail_submission', 'rail_high_water']),
  };
}

async function fenceOf(accountId: string): Promise<string> {
  return withClient(dbs.paydb, async (c) => {
    const r = await c.query<{ fence: string }>(
      'SELECT fence::text FROM account WHERE account_id = $1',
      [accountId],
    );
    return r.rows[0].fence;
  });
}

describe('the rail pays only what payment-resource recorded', () => {
  const ghostPayout = randomUUID();
  const ghost: SubmitRequest = {
    payoutId: ghostPayout,
    accountId: 'sec-ghost-acct',
    amountMinor: 5_000_000,
    currency: 'EUR',
    beneficiaryRef: 'mallory-iban',
  };

  it('a payout that exists nowhere, under a token nobody granted, reaches nothing', async () => {
    const before = await railAndProxy();
    expectRefused(await submitByHand(ATTACKER, '1', ghost), 'grant', 'missing');
    // A proof signed with a key of the attacker's own.
    const forged = foreignRing().sign(GRANT_PROOF_TYPE, {
      key: payoutLockKey(ghost.accountId),
      tok: '1',
      sub: ATTACKER,
      sid: randomUUID(),
      iat: Math.floor(Date.now() / 1000),
    });
    expectRefused(
      await submitByHand(ATTACKER, '1', ghost, { grant: forged }),
      'grant',
      'unknown-key',
    );
    expect(await railAndProxy()).toEqual(before);
  });

  it('a genuine grant is not enough: without payment-resource’s instruction nothing is presented', async () => {
    const handle = await grantOf(ATTACKER, ghost.accountId);
    const token = handle.fencingToken.toString();
    const before = await railAndProxy();
    const grant = handle.grantProof;
    expectRefused(await submitByHand(ATTACKER, token, ghost, { grant }), 'instruction', 'missing');
    const forged = foreignRing().sign(PAYOUT_INSTRUCTION_TYPE, {
      pid: ghostPayout,
      acc: ghost.accountId,
      amt: ghost.amountMinor,
      cur: 'EUR',
      ben: ghost.beneficiaryRef,
      tok: token,
      sub: ATTACKER,
      iat: Math.floor(Date.now() / 1000),
    });
    expectRefused(
      await submitByHand(ATTACKER, token, ghost, { grant, instruction: forged }),
      'instruction',
      'unknown-key',
    );
    expect(await railAndProxy()).toEqual(before);
    await handle.release();
  });

  it('a real grant and a real payout of 100 cannot pay 5,000,000, another beneficiary, or for someone else', async () => {
    const accountId = await seedFundedAccount(dbs.paydb);
    const payoutId = await seedPendingPayout(dbs.paydb, accountId, 100);
    const handle = await grantOf(HONEST, accountId);
    const pay = paymentsAs(HONEST);
    await pay.claim(payoutId, handle.fence, 'PENDING');
    const { railInstruction } = await pay.markSubmitted(payoutId, handle.fence);
    const record = await pay.get(payoutId);
    const honest: SubmitRequest = {
      payoutId,
      accountId,
      amountMinor: 100,
      currency: 'EUR',
      beneficiaryRef: record.beneficiaryRef,
    };
    const token = handle.fencingToken.toString();
    const proofs = { grant: handle.grantProof, instruction: railInstruction };
    const before = await railAndProxy();
    const inflated = await submitByHand(
      HONEST,
      token,
      { ...honest, amountMinor: 5_000_000 },
      proofs,
    );
    expectRefused(inflated, 'instruction', 'mismatch');
    expect(inflated.body.details.field).toBe('amountMinor');
    const redirected = await submitByHand(
      HONEST,
      token,
      { ...honest, beneficiaryRef: 'mallory-iban' },
      proofs,
    );
    expectRefused(redirected, 'instruction', 'mismatch');
    expect(redirected.body.details.field).toBe('beneficiaryRef');
    // The honest worker's proofs, read off the wire by another executor, are the honest worker's.
    expectRefused(await submitByHand(ATTACKER, token, honest, proofs), 'grant', 'owner');
    expect(await railAndProxy()).toEqual(before);

    // The instructed submission itself goes through, once.
    const ack = await proxyAs(HONEST).submit(handle.fence, railInstruction, honest);
    expect(ack.presentedToken).toBe(handle.fencingToken);
    const after = await railAndProxy();
    expect([after.received - before.received, after.booked - before.booked]).toEqual([1, 1]);
    const transfers = (await http('GET', `${stub.url}/lookup?clientRef=${railClientRef(payoutId)}`))
      .body.transfers as { amountMinor: number }[];
    expect(transfers.map((t) => t.amountMinor)).toEqual([100]);
    await handle.release();
  });

  it('every refusal is the proof_rejected safety event, counted by guard, proof and reason', async () => {
    expect(
      await scrapeSeries(
        proxy.url,
        'proof_rejected_total{guard="rail-proxy",proof="instruction",reason="mismatch"}',
        'throw',
      ),
    ).toBeGreaterThanOrEqual(2);
    expect(
      await scrapeSeries(
        proxy.url,
        'proof_rejected_total{guard="rail-proxy",proof="grant",reason="missing"}',
        'throw',
      ),
    ).toBeGreaterThanOrEqual(1);
    const events = (await http('GET', `${proxy.url}/v1/safety-events`)).body;
    expect(JSON.stringify(events)).toContain('proof_rejected');
  });
});

describe('no account freezes on the word of one caller', () => {
  it('a claim under a made-up token, or another key’s grant, never moves the fence', async () => {
    const accountId = await seedFundedAccount(dbs.paydb);
    const payoutId = await seedPendingPayout(dbs.paydb, accountId, 100);
    expectRefused(await claimByHand(ATTACKER, payoutId, '99999999'), 'grant', 'missing');
    // The attacker's own genuine grant, of another account's key.
    const other = await grantOf(ATTACKER, `acct-${randomUUID().slice(0, 8)}`);
    const claimed = await claimByHand(ATTACKER, payoutId, '99999999', other.grantProof);
    expectRefused(claimed, 'grant', 'token');
    const wrongKey = await claimByHand(
      ATTACKER,
      payoutId,
      other.fencingToken.toString(),
      other.grantProof,
    );
    expectRefused(wrongKey, 'grant', 'lock-key');
    expect(await fenceOf(accountId)).toBe('0');
    await other.release();

    // The honest holder of the account's lock is not fenced out by any of it.
    const honest = await grantOf(HONEST, accountId);
    await expect(paymentsAs(HONEST).claim(payoutId, honest.fence, 'PENDING')).resolves.toEqual({
      payoutId,
      state: 'CLAIMED',
    });
    expect(await fenceOf(accountId)).toBe(honest.fencingToken.toString());
    expect(
      await scrapeSeries(
        payments.url,
        'proof_rejected_total{guard="payment-resource",proof="grant",reason="lock-key"}',
        'throw',
      ),
    ).toBe(1);
    await honest.release();
  });
});

describe('sessions and grants belong to their owner', () => {
  it('another executor can neither keep, close, use nor free an executor’s session and lock', async () => {
    const handle = await grantOf(HONEST, `acct-${randomUUID().slice(0, 8)}`);
    const sid = handle.sessionId;
    const key = handle.key;
    const token = handle.fencingToken.toString();
    const as = (owner: string, extra: Record<string, string> = {}) => ({
      'x-owner-id': owner,
      ...extra,
    });
    const before = await tableSnapshot(dbs.lockdb, ['lock_session', 'lock_entry']);
    const refused = await Promise.all([
      http('POST', `${lockServer.url}/v1/sessions/${sid}/heartbeat`, { headers: as(ATTACKER) }),
      http('POST', `${lockServer.url}/v1/locks/${key}/renew`, {
        headers: as(ATTACKER, { 'x-fencing-token': token }),
        body: { sessionId: sid },
      }),
      http('POST', `${lockServer.url}/v1/locks/payout:acct-other/acquire`, {
        headers: as(ATTACKER),
        body: { sessionId: sid },
      }),
      // Even with the holder's own proof, read off the wire.
      http('DELETE', `${lockServer.url}/v1/locks/${key}`, {
        headers: as(ATTACKER, { 'x-fencing-token': token, 'x-grant-proof': handle.grantProof }),
      }),
    ]);
    const closed = await http('DELETE', `${lockServer.url}/v1/sessions/${sid}`, {
      headers: as(ATTACKER),
    });
    for (const res of [...refused, closed]) {
      expect([res.status, res.body?.code]).toEqual([403, 'FORBIDDEN']);
    }
    // A release without the proof, or with a forged one, frees nothing either.
    const bare = await http('DELETE', `${lockServer.url}/v1/locks/${key}`, {
      headers: as(ATTACKER, { 'x-fencing-token': token }),
      noProof: true,
    });
    expectRefused(bare, 'grant', 'missing');
    expect(await tableSnapshot(dbs.lockdb, ['lock_session', 'lock_entry'])).toBe(before);

    // What another executor may read of the lock: who holds it, not its token.
    const seen = await http('GET', `${lockServer.url}/v1/locks/${key}`, { headers: as(ATTACKER) });
    expect(seen.body).toMatchObject({ held: true, ownerId: HONEST });
    expect(seen.body.fencingToken).toBeUndefined();
    const own = await http('GET', `${lockServer.url}/v1/locks/${key}`, { headers: as(HONEST) });
    expect(own.body.fencingToken).toBe(token);
    await expect(handle.release()).resolves.toBe(true);
  });
});

describe('a revoke fences its holder at both guards before it answers', () => {
  let revoker: RunningApp;

  beforeAll(async () => {
    // A second replica, configured with the guards (docs/security.md, "Signed grants").
    revoker = await spawnApp('lock-server', {
      AUTH_POLICY: DEV_POLICY_PATH,
      LOCK_BACKEND: 'pg',
      LOCKDB_URL: dbs.lockdb,
      FENCE_POINTS: payoutFencePoints(payments.url, proxy.url),
    });
    apps.push(revoker);
  });

  it('the revoked holder’s genuine proof and instruction are refused at once, no reconciler needed', async () => {
    const accountId = await seedFundedAccount(dbs.paydb);
    const payoutId = await seedPendingPayout(dbs.paydb, accountId, 100);
    const handle = await grantOf(HONEST, accountId);
    const pay = paymentsAs(HONEST);
    await pay.claim(payoutId, handle.fence, 'PENDING');
    const { railInstruction } = await pay.markSubmitted(payoutId, handle.fence);
    const revoked = await http('POST', `${revoker.url}/v1/locks/${handle.key}/revoke`, {
      body: {
        operator: 'operator',
        reason: 'stuck holder drill',
        expectedToken: `${handle.fencingToken}`,
      },
    });
    expect(revoked.status).toBe(200);
    expect(revoked.body.guards).toEqual({ 'payment-resource': 'raised', 'rail-proxy': 'raised' });
    const floor = BigInt(revoked.body.newTokenFloor);
    expect(BigInt(await fenceOf(accountId))).toBe(floor);

    const record = await pay.get(payoutId);
    const submission: SubmitRequest = {
      payoutId,
      accountId,
      amountMinor: 100,
      currency: 'EUR',
      beneficiaryRef: record.beneficiaryRef,
    };
    const before = await railAndProxy();
    await expect(
      proxyAs(HONEST).submit(handle.fence, railInstruction, submission),
    ).rejects.toMatchObject({ code: 'FENCED_OUT' });
    await expect(
      pay.railOutcome(payoutId, handle.fence, { outcome: 'AMBIGUOUS', reason: 'after revoke' }),
    ).rejects.toMatchObject({ code: 'FENCED_OUT' });
    expect((await railAndProxy()).booked).toBe(before.booked);
  });

  it('a guard that cannot be reached is named, and the revoke still stands', async () => {
    await proxy.stop();
    try {
      const handle = await grantOf(HONEST, `acct-${randomUUID().slice(0, 8)}`);
      const revoked = await http('POST', `${revoker.url}/v1/locks/${handle.key}/revoke`, {
        body: { operator: 'operator', reason: 'rail-proxy is down drill' },
      });
      expect(revoked.status).toBe(200);
      // No such account at payment-resource: nothing to fence there; the proxy did not answer.
      expect(revoked.body.guards).toEqual({
        'payment-resource': 'not_found',
        'rail-proxy': 'failed',
      });
    } finally {
      proxy = await spawnApp('rail-proxy', {
        AUTH_POLICY: DEV_POLICY_PATH,
        PROXYDB_URL: dbs.proxydb,
        RAIL_STUB_URL: stub.url,
      });
      apps.push(proxy);
    }
  });
});

describe('every replica and both backends sign proofs every guard accepts', () => {
  it('a grant from another pg replica and from an etcd lock-server writes at payment-resource', async () => {
    const etcd = await startEtcd({ label: 'proofs' });
    const replicas: RunningApp[] = [];
    try {
      replicas.push(
        await spawnApp('lock-server', {
          AUTH_POLICY: DEV_POLICY_PATH,
          LOCK_BACKEND: 'pg',
          LOCKDB_URL: dbs.lockdb,
        }),
        await spawnApp('lock-server', {
          AUTH_POLICY: DEV_POLICY_PATH,
          LOCK_BACKEND: 'etcd',
          ETCD_ENDPOINTS: etcd.endpoints.join(','),
        }),
      );
      for (const replica of replicas) {
        const accountId = await seedFundedAccount(dbs.paydb);
        const payoutId = await seedPendingPayout(dbs.paydb, accountId, 100);
        const handle = await grantOf(HONEST, accountId, replica);
        await expect(paymentsAs(HONEST).claim(payoutId, handle.fence, 'PENDING')).resolves.toEqual({
          payoutId,
          state: 'CLAIMED',
        });
        await handle.release();
      }
    } finally {
      await Promise.all(replicas.map((r) => r.stop()));
      await etcd.stop();
    }
  });
});
