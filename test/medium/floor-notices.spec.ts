import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ensureSigningKeys, SigningKeyRing } from '@dlock/identity';
import { REVOCATION_NOTICE_TYPE } from '@dlock/lock-api';
import { LockClient, type LockHandle } from '@dlock/lock-client';
import { PaymentResourceClient, payoutLockKey } from '@dlock/payout-contract';
import {
  DEV_POLICY_PATH,
  http,
  migratedDatabase,
  payoutFencePoints,
  scratchDir,
  seedFundedAccount,
  seedPendingPayout,
  spawnApp,
  tableSnapshot,
  testBearer,
  testGrantProof,
  testRevocationNotice,
  testTokenProvider,
  withClient,
  type RunningApp,
} from '@dlock/testing';

/**
 * Floors only on a revocation (docs/security.md, "Revocation notices"): a
 * fence point raises its memory of a key only to a floor the lock-server
 * signed a revocation notice over, and the lock-server signs only the floor
 * its own revoke took from the token sequence. Each case is an attack tried
 * from outside against real processes (lock-servers, payment-resource,
 * rail-proxy, PostgreSQL): on the build before the notices, one operator's
 * `{"floor":"9223372036854775807"}` froze an account for good.
 */
jest.setTimeout(180_000);

const HONEST = 'executor-1';
const INT64_MAX = '9223372036854775807';
const apps: RunningApp[] = [];
const clients: { close(): unknown }[] = [];
let single: RunningApp; // the development policy: one operator revokes
let twoPerson: RunningApp; // the same roles, revoke.approvals: 2
let payments: RunningApp;
let proxy: RunningApp;
let dbs: { lockdb: string; paydb: string; proxydb: string };

beforeAll(async () => {
  const [lockdb, paydb, proxydb] = await Promise.all([
    migratedDatabase('lockdb'),
    migratedDatabase('paydb'),
    migratedDatabase('proxydb'),
  ]);
  dbs = { lockdb, paydb, proxydb };
  const dev = readFileSync(DEV_POLICY_PATH, 'utf8');
  const twoPersonPolicy = path.join(scratchDir('floor-notices-'), 'two-person.yaml');
  writeFileSync(twoPersonPolicy, dev.replace(/^ {2}approvals: 1$/m, '  approvals: 2'));
  const policy = { AUTH_POLICY: DEV_POLICY_PATH };
  const stub = await spawnApp('rail-stub', {
    RAIL_STUB_LATENCY_MS: '0',
    RAIL_STUB_JOURNAL_PATH: path.join(scratchDir('floor-notices-stub-'), 'j.jsonl'),
    RAIL_STUB_JOURNAL_FSYNC: 'false',
  });
  apps.push(stub);
  [payments, proxy] = await Promise.all([
    spawnApp('payment-resource', { ...policy, PAYDB_URL: paydb }),
    spawnApp('rail-proxy', { ...policy, PROXYDB_URL: proxydb, RAIL_STUB_URL: stub.url }),
  ]);
  apps.push(payments, proxy);
  const guards = { LOCK_BACKEND: 'pg', LOCKDB_URL: lockdb };
  const urls = { FENCE_POINTS: payoutFencePoints(payments.url, proxy.url) };
  [single, twoPerson] = await Promise.all([
    spawnApp('lock-server', { ...policy, ...guards, ...urls }),
    spawnApp('lock-server', { AUTH_POLICY: twoPersonPolicy, ...guards, ...urls }),
  ]);
  apps.push(single, twoPerson);
});

afterAll(async () => {
  for (const c of clients) c.close();
  await Promise.all(apps.map((a) => a.stop()));
});

/** A genuine grant of `payout:{accountId}` to `owner`, through the SDK. */
async function grantOf(owner: string, accountId: string): Promise<LockHandle> {
  const client = new LockClient({
    baseUrl: single.url,
    ownerId: owner,
    token: testTokenProvider(owner),
  });
  const session = await client.openSession();
  clients.push({ close: () => session.close() });
  return session.acquire(payoutLockKey(accountId));
}

/** Both guards' memory of every account: what a refused raise must leave as it was. */
async function guardMemory(): Promise<string> {
  const [fences, marks] = await Promise.all([
    tableSnapshot(dbs.paydb, ['account']),
    tableSnapshot(dbs.proxydb, ['rail_high_water']),
  ]);
  return fences + marks;
}

async function fenceOf(accountId: string): Promise<bigint> {
  return withClient(dbs.paydb, async (c) => {
    const r = await c.query<{ fence: string }>(
      'SELECT fence::text FROM account WHERE account_id = $1',
      [accountId],
    );
    return BigInt(r.rows[0].fence);
  });
}

async function highWaterOf(accountId: string): Promise<bigint | null> {
  return withClient(dbs.proxydb, async (c) => {
    const r = await c.query<{ t: string }>(
      'SELECT highest_token::text AS t FROM rail_high_water WHERE account_id = $1',
      [accountId],
    );
    return r.rows.length === 0 ? null : BigInt(r.rows[0].t);
  });
}

/** One operator's raise at both guards, with exactly this body. */
async function raiseBoth(accountId: string, body: Record<string, unknown>, subject = 'operator') {
  const headers = { 'x-operator': subject };
  const [fence, mark] = await Promise.all([
    http('POST', `${payments.url}/v1/accounts/${accountId}/fence-floor`, {
      headers: { ...headers, authorization: await testBearer(subject, 'payment-resource') },
      body,
    }),
    http('POST', `${proxy.url}/v1/rail/high-water/${accountId}/floor`, {
      headers: { ...headers, authorization: await testBearer(subject, 'rail-proxy') },
      body,
    }),
  ]);
  return [fence, mark];
}

/** A key ring no service trusts: what an attacker can sign with. */
function foreignRing(): SigningKeyRing {
  const dir = scratchDir('dlock-foreign-keys-');
  return SigningKeyRing.open(ensureSigningKeys(path.join(dir, 'keys.json')).keys);
}

/** An honest executor's claim under a fresh grant: the account is not frozen. */
async function honestClaimWorks(accountId: string): Promise<void> {
  const payoutId = await seedPendingPayout(dbs.paydb, accountId, 100);
  const handle = await grantOf(HONEST, accountId);
  const pay = new PaymentResourceClient(
    payments.url,
    HONEST,
    testTokenProvider(HONEST, 'payment-resource'),
  );
  clients.push(pay);
  await expect(pay.claim(payoutId, handle.fence, 'PENDING')).resolves.toMatchObject({
    state: 'CLAIMED',
  });
  await handle.release();
}

describe('no operator sets a floor of their own', () => {
  const now = () => Math.floor(Date.now() / 1000);
  const claims = (accountId: string, floor = INT64_MAX) => ({
    key: payoutLockKey(accountId),
    floor,
    rid: randomUUID(),
    req: 'operator-alice',
    apr: 'operator-bob',
    iat: now(),
  });

  it.each<[string, (accountId: string) => Record<string, unknown>, string]>([
    ['no notice at all (the attack of issue 49)', () => ({ floor: INT64_MAX }), 'missing'],
    [
      'a notice signed with a key the lock-server does not publish',
      (a) => ({
        floor: INT64_MAX,
        notice: foreignRing().sign(REVOCATION_NOTICE_TYPE, claims(a)),
      }),
      'unknown-key',
    ],
    [
      'a genuine grant proof passed off as a notice',
      (a) => ({
        floor: '7',
        notice: testGrantProof({ key: payoutLockKey(a), token: 7n, owner: 'operator' }),
      }),
      'malformed',
    ],
    [
      'a genuine notice of another account',
      () => ({
        floor: INT64_MAX,
        notice: testRevocationNotice({ key: payoutLockKey('acct-other'), floor: INT64_MAX }),
      }),
      'lock-key',
    ],
    [
      'a genuine notice stretched to another floor',
      (a) => ({
        floor: INT64_MAX,
        notice: testRevocationNotice({ key: payoutLockKey(a), floor: '5' }),
      }),
      'mismatch',
    ],
    [
      'a genuine notice under another revocation id',
      (a) => ({
        floor: '5',
        revocationId: randomUUID(),
        notice: testRevocationNotice({ key: payoutLockKey(a), floor: '5' }),
      }),
      'mismatch',
    ],
    [
      'a notice whose signature was cut from another',
      (a) => {
        const genuine = testRevocationNotice({ key: payoutLockKey(a), floor: '5' });
        const [h, , s] = genuine.split('.');
        const forged = Buffer.from(JSON.stringify(claims(a))).toString('base64url');
        return { floor: INT64_MAX, notice: `${h}.${forged}.${s}` };
      },
      'signature',
    ],
  ])('%s: 403 PROOF_REJECTED at both guards, nothing changed', async (_what, body, reason) => {
    const accountId = await seedFundedAccount(dbs.paydb);
    const before = await guardMemory();
    const refused = await raiseBoth(accountId, body(accountId));
    for (const res of refused) {
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({
        code: 'PROOF_REJECTED',
        details: { proof: 'revocation', reason },
      });
    }
    expect(await guardMemory()).toBe(before);
    await honestClaimWorks(accountId);
  });

  it('every refusal is the proof_rejected safety event, counted per guard', async () => {
    const accountId = await seedFundedAccount(dbs.paydb);
    await raiseBoth(accountId, { floor: INT64_MAX });
    for (const [app, guard] of [
      [payments, 'payment-resource'],
      [proxy, 'rail-proxy'],
    ] as const) {
      const text = (await http('GET', `${app.url}/metrics`)).text;
      const line = `proof_rejected_total{guard="${guard}",proof="revocation",reason="missing"}`;
      expect(text).toMatch(new RegExp(`^${line.replace(/[{}]/g, '\\$&')} [1-9]`, 'm'));
      expect(app.output()).toContain('"event":"proof_rejected"');
    }
  });
});

describe('the honest revoke still fences its holder before it answers', () => {
  it('the lock-server raises both guards with its notice; the listed notice re-presented moves nothing', async () => {
    const accountId = await seedFundedAccount(dbs.paydb);
    const handle = await grantOf(HONEST, accountId);
    const revoked = await http('POST', `${single.url}/v1/locks/${handle.key}/revoke`, {
      body: { operator: 'operator', reason: 'stuck holder drill' },
    });
    expect(revoked.status).toBe(200);
    expect(revoked.body.guards).toEqual({ 'payment-resource': 'raised', 'rail-proxy': 'raised' });
    const floor = BigInt(revoked.body.newTokenFloor);
    expect(await fenceOf(accountId)).toBe(floor);
    expect(await highWaterOf(accountId)).toBe(floor);

    // What the reconciler presents: the record's notice, over the record's floor.
    const list = await http('GET', `${single.url}/v1/revocations?limit=500`);
    const record = (list.body.items as Record<string, string>[]).find(
      (r) => r.revocationId === revoked.body.revocationId,
    )!;
    expect(record.notice).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const again = await raiseBoth(accountId, {
      floor: record.newTokenFloor,
      revocationId: record.revocationId,
      notice: record.notice,
    });
    expect(again.map((r) => [r.status, r.body.raised])).toEqual([
      [200, false],
      [200, false],
    ]);
    // The same notice cannot carry another floor or another account.
    const elsewhere = await seedFundedAccount(dbs.paydb);
    const before = await guardMemory();
    const stretched = await raiseBoth(accountId, { floor: INT64_MAX, notice: record.notice });
    expect(stretched.map((r) => r.status)).toEqual([403, 403]);
    const moved = await raiseBoth(elsewhere, {
      floor: record.newTokenFloor,
      notice: record.notice,
    });
    expect(moved.map((r) => r.status)).toEqual([403, 403]);
    expect(await guardMemory()).toBe(before);
    // The floor came from the token sequence: the next grant is above it.
    await honestClaimWorks(accountId);
  });
});

describe('the break-glass revoke takes two people', () => {
  async function as(subject: string, method: 'GET' | 'POST', url: string, body?: unknown) {
    return http(method, url, {
      headers: { authorization: await testBearer(subject, 'lock-server') },
      body,
    });
  }

  it('one operator’s request moves no guard; a team account, the requester itself and a look-alike cannot approve; a second person does', async () => {
    const accountId = await seedFundedAccount(dbs.paydb);
    const handle = await grantOf(HONEST, accountId);
    const before = await guardMemory();
    const requested = await as(
      'operator-alice',
      'POST',
      `${twoPerson.url}/v1/locks/${handle.key}/revoke`,
      {
        operator: 'operator-alice',
        reason: 'INC-49 break-glass drill',
      },
    );
    expect(requested.status).toBe(202);
    const approve = `${twoPerson.url}/v1/revocations/${requested.body.requestId as string}/approve`;

    const shared = await as('operator', 'POST', approve);
    expect(shared.status).toBe(403);
    expect(shared.body.details).toEqual({ reason: 'shared-identity' });
    const self = await as('operator-alice', 'POST', approve);
    expect(self.status).toBe(403);
    expect(self.body.details).toEqual({ reason: 'self-approval' });
    const lookalike = await as('operator-alice\u200b', 'POST', approve);
    expect(lookalike.status).toBe(401);
    expect(await guardMemory()).toBe(before);
    // The shared identity cannot ask either: its user may be the approver.
    const sharedAsk = await as(
      'operator',
      'POST',
      `${twoPerson.url}/v1/locks/${handle.key}/revoke`,
      {
        operator: 'operator',
        reason: 'INC-49 break-glass drill',
      },
    );
    expect(sharedAsk.status).toBe(403);
    expect(sharedAsk.body.details).toEqual({ reason: 'shared-identity' });

    const approved = await as('operator-bob', 'POST', approve);
    expect(approved.status).toBe(200);
    expect(approved.body.guards).toEqual({ 'payment-resource': 'raised', 'rail-proxy': 'raised' });
    const floor = BigInt(approved.body.newTokenFloor);
    expect(await fenceOf(accountId)).toBe(floor);
    expect(await highWaterOf(accountId)).toBe(floor);
    // Audited at each guard with both people the notice names.
    for (const guard of [payments, proxy]) {
      const raised = guard
        .output()
        .split('\n')
        .find((l) => l.includes('"event":"fence_floor_raised"') && l.includes(accountId));
      expect(JSON.parse(raised!)).toMatchObject({
        revocationId: approved.body.revocationId,
        requestedBy: 'operator-alice',
        approvedBy: 'operator-bob',
        floor: `${floor}`,
      });
    }
    await honestClaimWorks(accountId);
  });
});
