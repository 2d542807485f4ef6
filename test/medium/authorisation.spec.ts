import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  DEV_POLICY_PATH,
  REPO_ROOT,
  refusingPort,
  http,
  migratedDatabase,
  seedFundedAccount,
  seedPendingPayout,
  spawnApp,
  testAppAuthEnv,
  testBearer,
  testRevocationNotice,
  tableSnapshot,
  type RunningApp,
  spawnGroup,
  scratchDir,
} from '@dlock/testing';

/**
 * The authorisation policy (docs/security.md): every service enforces
 * deploy/policy/dev-policy.yaml. An identity calling an operation its roles do
 * not grant (or locking a key outside its patterns) gets 403 FORBIDDEN with
 * the envelope and nothing changes; the right identity gets the usual answers.
 * Real processes, real PostgreSQL, the tests' development issuer.
 */
jest.setTimeout(180_000);

const TRACE_ID = expect.stringMatching(/^[0-9a-f]{32}$/);
const SID = '0f6b6a8e-9d7e-4d0b-8d7e-2b1a3f4c5d6e';
const apps: RunningApp[] = [];
let byName: Record<string, RunningApp>;
let payoutId: string;
let accountId: string;
let dbs: { lockdb: string; paydb: string; proxydb: string };

beforeAll(async () => {
  const [lockdb, paydb, proxydb] = await Promise.all([
    migratedDatabase('lockdb'),
    migratedDatabase('paydb'),
    migratedDatabase('proxydb'),
  ]);
  dbs = { lockdb, paydb, proxydb };
  accountId = await seedFundedAccount(paydb);
  payoutId = await seedPendingPayout(paydb, accountId);
  const policy = { AUTH_POLICY: DEV_POLICY_PATH };
  // Nothing listens on the rail port or `nowhere`: no request here may get that far.
  const nowhere = `http://127.0.0.1:${await refusingPort()}`;
  const [lockServer, payments, proxy, reconciler] = await Promise.all([
    spawnApp('lock-server', { ...policy, LOCK_BACKEND: 'pg', LOCKDB_URL: lockdb }),
    spawnApp('payment-resource', { ...policy, PAYDB_URL: paydb }),
    spawnApp('rail-proxy', { ...policy, PROXYDB_URL: proxydb, RAIL_STUB_URL: nowhere }),
    spawnApp('reconciler', {
      ...policy,
      OWNER_ID: 'reconciler',
      LOCK_SERVER_URL: nowhere,
      PAYMENT_RESOURCE_URL: nowhere,
      RAIL_PROXY_URL: nowhere,
      RAIL_STUB_URL: nowhere,
      PAYDB_URL: await migratedDatabase('paydb'),
      PROXYDB_URL: await migratedDatabase('proxydb'),
    }),
  ]);
  apps.push(lockServer, payments, proxy, reconciler);
  byName = {
    'lock-server': lockServer,
    'payment-resource': payments,
    'rail-proxy': proxy,
    reconciler,
  };
});

afterAll(async () => {
  await Promise.all(apps.map((a) => a.stop()));
});

/** What the databases hold: a refused request must leave every row as it was. */
async function snapshot(): Promise<string> {
  const parts = await Promise.all([
    tableSnapshot(dbs.lockdb, [
      'lock_session',
      'lock_entry',
      'lock_revocation',
      'lock_revocation_request',
    ]),
    tableSnapshot(dbs.paydb, [
      'payout',
      'payout_transition',
      'ledger_entry',
      'account',
      'idempotency_record',
    ]),
    tableSnapshot(dbs.proxydb, ['rail_submission', 'rail_high_water', 'rail_idempotency']),
  ]);
  return parts.join('\n');
}

const fenced = { 'x-fencing-token': '5', 'x-idempotency-key': 'authz-matrix-1' };

/** [who, service, method, path, operation, body?, headers?, reason?] */
type Refused = [
  subject: string,
  service: string,
  method: 'GET' | 'POST' | 'DELETE',
  path: () => string,
  operation: string,
  body?: () => unknown,
  headers?: Record<string, string>,
  reason?: string,
];

const REFUSED: Refused[] = [
  ['stranger', 'lock-server', 'POST', () => '/v1/sessions', 'sessions.open', () => ({})],
  [
    'executor-1',
    'lock-server',
    'POST',
    () => '/v1/locks/other:1/acquire',
    'locks.acquire',
    () => ({ sessionId: SID }),
    {},
    'identity may not lock this key',
  ],
  [
    'operator',
    'lock-server',
    'POST',
    () => '/v1/locks/billing:a/acquire',
    'locks.acquire',
    () => ({ sessionId: SID }),
    {},
    'identity may not lock this key',
  ],
  [
    'executor-1',
    'lock-server',
    'POST',
    () => '/v1/locks/payout:a/revoke',
    'locks.revoke',
    () => ({ operator: 'op', reason: 'not my job at all' }),
  ],
  [
    'reconciler',
    'lock-server',
    'POST',
    () => '/v1/locks/payout:a/revoke',
    'locks.revoke',
    () => ({ operator: 'op', reason: 'not my job at all' }),
  ],
  [
    'executor-1',
    'lock-server',
    'POST',
    () => `/v1/revocations/${SID}/approve`,
    'revocations.approve',
  ],
  ['executor-1', 'lock-server', 'GET', () => '/v1/revocations', 'revocations.list'],
  ['feed', 'lock-server', 'GET', () => '/v1/locks/payout:a', 'locks.inspect'],
  [
    'reconciler',
    'payment-resource',
    'POST',
    () => `/v1/payouts/${payoutId}/claim`,
    'payouts.claim',
    () => ({ expectedState: 'PENDING' }),
    fenced,
  ],
  [
    'operator',
    'payment-resource',
    'POST',
    () => `/v1/payouts/${payoutId}/claim`,
    'payouts.claim',
    () => ({ expectedState: 'PENDING' }),
    fenced,
  ],
  [
    'reconciler',
    'payment-resource',
    'POST',
    () => `/v1/payouts/${payoutId}/rail-outcome`,
    'payouts.rail-outcome',
    () => ({ outcome: 'SUBMITTED' }),
    fenced,
  ],
  [
    'operator',
    'payment-resource',
    'POST',
    () => `/v1/payouts/${payoutId}/post`,
    'payouts.post',
    () => ({}),
    fenced,
  ],
  [
    'executor-1',
    'payment-resource',
    'POST',
    () => `/v1/payouts/${payoutId}/abandon`,
    'payouts.abandon',
    () => ({ operator: 'op', reason: 'not my job at all' }),
  ],
  [
    'reconciler',
    'payment-resource',
    'POST',
    () => `/v1/payouts/${payoutId}/abandon`,
    'payouts.abandon',
    () => ({ operator: 'op', reason: 'not my job at all' }),
  ],
  [
    'executor-1',
    'payment-resource',
    'POST',
    () => `/v1/payouts/${payoutId}/resolve`,
    'payouts.resolve',
    () => ({ resolution: 'NOT_FOUND', evidence: 'x' }),
    fenced,
  ],
  [
    'executor-1',
    'payment-resource',
    'POST',
    () => `/v1/accounts/${accountId}/fence-floor`,
    'accounts.fence-floor',
    () => ({ floor: '100' }),
    { 'x-operator': 'op' },
  ],
  [
    'executor-1',
    'payment-resource',
    'POST',
    () => '/v1/accounts',
    'accounts.create',
    () => ({ currency: 'EUR' }),
    { 'idempotency-key': 'authz-1' },
  ],
  [
    'reconciler',
    'payment-resource',
    'POST',
    () => `/v1/accounts/${accountId}/deposits`,
    'accounts.deposit',
    () => ({ amountMinor: 5, currency: 'EUR' }),
    { 'idempotency-key': 'authz-2' },
  ],
  [
    'executor-1',
    'payment-resource',
    'POST',
    () => '/v1/payouts',
    'payouts.create',
    () => ({ accountId, amountMinor: 5, currency: 'EUR', beneficiaryRef: 'b' }),
    { 'idempotency-key': 'authz-3' },
  ],
  ['stranger', 'payment-resource', 'GET', () => `/v1/payouts/${payoutId}`, 'payouts.read'],
  [
    'reconciler',
    'rail-proxy',
    'POST',
    () => '/v1/rail/submissions',
    'rail.submit',
    () => ({ payoutId }),
    fenced,
  ],
  [
    'operator',
    'rail-proxy',
    'POST',
    () => '/v1/rail/submissions',
    'rail.submit',
    () => ({ payoutId }),
    fenced,
  ],
  [
    'executor-1',
    'rail-proxy',
    'POST',
    () => `/v1/rail/high-water/${accountId}/floor`,
    'high-water.floor',
    () => ({ floor: '100' }),
    { 'x-operator': 'op' },
  ],
  ['executor-1', 'reconciler', 'GET', () => '/v1/reconciler/report', 'reconciler.report'],
];

async function call(
  subject: string,
  service: string,
  method: string,
  path: string,
  opts: { body?: unknown; headers?: Record<string, string> } = {},
) {
  return http(method, `${byName[service].url}${path}`, {
    headers: { ...opts.headers, authorization: await testBearer(subject, service) },
    body: opts.body,
  });
}

describe('a request the policy does not allow', () => {
  it('is 403 FORBIDDEN with the envelope on every service, and nothing changes', async () => {
    const before = await snapshot();
    for (const [subject, service, method, path, operation, body, headers, reason] of REFUSED) {
      const res = await call(subject, service, method, path(), { body: body?.(), headers });
      const why = reason ?? `identity may not call ${operation}`;
      expect({
        who: `${subject} ${method} ${service}${path()}`,
        status: res.status,
        body: res.body,
      }).toEqual({
        who: `${subject} ${method} ${service}${path()}`,
        status: 403,
        body: {
          code: 'FORBIDDEN',
          message: `not allowed by the authorisation policy: ${why}`,
          retrySafe: false,
          details: { reason: 'policy', operation },
          traceId: TRACE_ID,
        },
      });
    }
    expect(await snapshot()).toBe(before);
  });

  it('is counted as auth_refusals_total{refusal="policy"} on the service that refused', async () => {
    const metrics = await fetch(`${byName['rail-proxy'].url}/metrics`).then((r) => r.text());
    const line = metrics
      .split('\n')
      .find((l) => l.startsWith('auth_refusals_total{refusal="policy"}'));
    expect(Number(line?.split(' ')[1])).toBeGreaterThanOrEqual(3);
  });
});

describe('the identity the policy allows gets the usual answers', () => {
  it('an executor locks a payout key, the operator revokes it, the reconciler reads the revocation', async () => {
    const session = await call('executor-1', 'lock-server', 'POST', '/v1/sessions', {
      body: { ownerId: 'executor-1', ttlMillis: 10_000 },
    });
    expect(session.status).toBe(201);
    const sessionId = session.body.sessionId as string;
    const key = `payout:${randomUUID()}`;
    const grant = await call('executor-1', 'lock-server', 'POST', `/v1/locks/${key}/acquire`, {
      body: { sessionId },
      headers: { 'x-owner-id': 'executor-1' },
    });
    expect(grant.status).toBe(200);
    expect(grant.body).toMatchObject({ key, ownerId: 'executor-1', sessionId });
    const info = await call('operator', 'lock-server', 'GET', `/v1/locks/${key}`);
    expect(info.body).toMatchObject({ key, held: true, fencingToken: grant.body.fencingToken });
    const revoked = await call('operator', 'lock-server', 'POST', `/v1/locks/${key}/revoke`, {
      body: { operator: 'ops-jane', reason: 'stuck worker OPS-1' },
    });
    expect({ status: revoked.status, body: revoked.body }).toEqual({
      status: 200,
      body: {
        revokedToken: grant.body.fencingToken,
        newTokenFloor: expect.stringMatching(/^[1-9][0-9]*$/),
        revocationId: expect.stringMatching(/^[0-9a-f-]{36}$/),
      },
    });
    const list = await call('reconciler', 'lock-server', 'GET', '/v1/revocations');
    expect(list.status).toBe(200);
    // The revocation names the authenticated caller; the body's name is a note (docs/security.md).
    expect(list.body.items).toContainEqual(
      expect.objectContaining({
        key,
        operator: 'operator',
        reason: 'stuck worker OPS-1 [noted operator: ops-jane]',
        revokedToken: grant.body.fencingToken,
      }),
    );
  });

  it('the feed opens an account, funds it and asks for a payout; an executor reads it', async () => {
    const account = await call('feed', 'payment-resource', 'POST', '/v1/accounts', {
      body: { currency: 'EUR' },
      headers: { 'idempotency-key': randomUUID() },
    });
    expect(account.status).toBe(201);
    const id = account.body.accountId as string;
    const deposit = await call('feed', 'payment-resource', 'POST', `/v1/accounts/${id}/deposits`, {
      body: { amountMinor: 500, currency: 'EUR' },
      headers: { 'idempotency-key': randomUUID() },
    });
    expect(deposit.status).toBe(201);
    const payout = await call('feed', 'payment-resource', 'POST', '/v1/payouts', {
      body: { accountId: id, amountMinor: 100, currency: 'EUR', beneficiaryRef: 'ben-1' },
      headers: { 'idempotency-key': randomUUID() },
    });
    expect(payout.status).toBe(201);
    const read = await call(
      'executor-1',
      'payment-resource',
      'GET',
      `/v1/payouts/${payout.body.payoutId as string}`,
    );
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ payoutId: payout.body.payoutId, state: 'PENDING' });
  });

  it('the operator raises a fence floor and reads the reconciler report', async () => {
    const raised = await call(
      'operator',
      'payment-resource',
      'POST',
      `/v1/accounts/${accountId}/fence-floor`,
      {
        body: {
          floor: '7',
          notice: testRevocationNotice({ key: `payout:${accountId}`, floor: '7' }),
        },
        headers: { 'x-operator': 'operator' },
      },
    );
    expect(raised.status).toBe(200);
    const report = await call('operator', 'reconciler', 'GET', '/v1/reconciler/report');
    expect(report.status).toBe(200);
    const submission = await call(
      'executor-1',
      'rail-proxy',
      'GET',
      `/v1/rail/submissions/${payoutId}`,
    );
    expect(submission.status).not.toBe(403);
  });
});

describe('acting for a person (X-Acting-For, docs/security.md)', () => {
  /** A person's token as the console forwards it: audience console, no `Bearer `. */
  const person = async (subject: string) =>
    (await testBearer(subject, 'console')).slice('Bearer '.length);
  const revoke = (key: string) => ({
    body: { operator: 'operator-alice', reason: 'nobody holds this key' },
    path: `/v1/locks/${key}/revoke`,
  });

  it("the console reads as itself and acts only with the person's roles; nobody else may act for anyone", async () => {
    const before = await snapshot();
    expect((await call('console', 'lock-server', 'GET', '/v1/locks')).status).toBe(200);
    const { body, path } = revoke(`payout:${randomUUID()}`);
    // Alice's operator role lets the revoke through the policy; the key is simply not held.
    const asAlice = await call('console', 'lock-server', 'POST', path, {
      body,
      headers: { 'x-acting-for': await person('operator-alice') },
    });
    expect([asAlice.status, asAlice.body.code]).toEqual([404, 'NOT_FOUND']);
    const refusals: [string, Record<string, string>, number, unknown][] = [
      // The console's own role grants no action.
      ['console', {}, 403, { reason: 'policy', operation: 'locks.revoke' }],
      // A person is held to their own roles, whoever forwards them.
      [
        'console',
        { 'x-acting-for': await person('stranger') },
        403,
        { reason: 'policy', operation: 'locks.revoke' },
      ],
      // Only the console may forward a person.
      [
        'operator',
        { 'x-acting-for': await person('operator-alice') },
        403,
        { reason: 'policy', operation: 'identity.act-for' },
      ],
      [
        'executor-1',
        { 'x-acting-for': await person('operator-alice') },
        403,
        { reason: 'policy', operation: 'identity.act-for' },
      ],
      // A service token is no person's token.
      [
        'console',
        { 'x-acting-for': (await testBearer('operator-alice', 'lock-server')).slice(7) },
        401,
        undefined,
      ],
    ];
    for (const [caller, headers, status, details] of refusals) {
      const res = await call(caller, 'lock-server', 'POST', path, { body, headers });
      expect({ caller, headers, status: res.status, details: res.body.details }).toEqual({
        caller,
        headers,
        status,
        details,
      });
    }
    expect(await snapshot()).toBe(before);
  });
});

describe('a policy file with a mistake', () => {
  const file = path.join(scratchDir('dlock-bad-policy-'), 'policy.yaml');
  writeFileSync(
    file,
    'version: 1\nroles:\n  worker:\n    operations: [locks.inspect, locks.aquire]\nidentities:\n  - subject: w\n    roles: [worker]\n',
  );
  const DB = 'postgres://u:p@127.0.0.1:1/db';
  const nowhere = 'http://127.0.0.1:1';
  it.each<[string, Record<string, string>]>([
    ['lock-server', { LOCK_BACKEND: 'pg', LOCKDB_URL: DB }],
    ['payment-resource', { PAYDB_URL: DB }],
    ['rail-proxy', { PROXYDB_URL: DB, RAIL_STUB_URL: nowhere }],
    [
      'executor',
      {
        OWNER_ID: 'w',
        LOCK_SERVER_URL: nowhere,
        PAYMENT_RESOURCE_URL: nowhere,
        RAIL_PROXY_URL: nowhere,
      },
    ],
    [
      'reconciler',
      {
        PAYDB_URL: DB,
        PROXYDB_URL: DB,
        LOCK_SERVER_URL: nowhere,
        PAYMENT_RESOURCE_URL: nowhere,
        RAIL_PROXY_URL: nowhere,
        RAIL_STUB_URL: nowhere,
      },
    ],
  ])('stops %s at start: exit code 1, the line and entry named', async (app, env) => {
    const auth = await testAppAuthEnv('bad-policy');
    const exit = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
      const proc = spawnGroup(process.execPath, [path.join('dist', 'apps', app, 'main.js')], {
        cwd: REPO_ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          LOG_LEVEL: 'warn',
          ...auth,
          ...env,
          AUTH_POLICY: file,
          PORT: '0',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
      proc.on('error', reject);
      proc.on('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, stderr });
      });
    });
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain(
      `AUTH_POLICY ${file}:4: roles.worker.operations.1: unknown operation "locks.aquire"`,
    );
  });
});
