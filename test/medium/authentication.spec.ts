import { readFileSync } from 'node:fs';
import path from 'node:path';
import { base64url, SignJWT, type JWK } from 'jose';
import { DEV_ISSUER, DevIssuer, TOKEN_BYTES_MAX } from '@dlock/identity';
import {
  refusingPort,
  http,
  migratedDatabase,
  seedFundedAccount,
  seedPendingPayout,
  spawnApp,
  testBearer,
  testIssuer,
  tableSnapshot,
  type RunningApp,
  scratchDir,
} from '@dlock/testing';

/**
 * Every endpoint of every service refuses a request without a valid service
 * token for it, with the envelope, before anything runs (docs/security.md):
 * real processes, real PostgreSQL, the tests' development issuer.
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
  // Nothing listens on the rail port: no request in this file may get that far.
  const railUrl = `http://127.0.0.1:${await refusingPort()}`;
  const [lockServer, payments] = await Promise.all([
    spawnApp('lock-server', { LOCK_BACKEND: 'pg', LOCKDB_URL: lockdb }),
    spawnApp('payment-resource', { PAYDB_URL: paydb }),
  ]);
  apps.push(lockServer, payments);
  const proxy = await spawnApp('rail-proxy', { PROXYDB_URL: proxydb, RAIL_STUB_URL: railUrl });
  apps.push(proxy);
  // The executor and the reconciler work on databases and peers of their own (nothing
  // answers at `nowhere`): their background work must not touch what this file snapshots.
  const nowhere = `http://127.0.0.1:${await refusingPort()}`;
  const peers = {
    LOCK_SERVER_URL: nowhere,
    PAYMENT_RESOURCE_URL: nowhere,
    RAIL_PROXY_URL: nowhere,
  };
  const [executor, reconciler] = await Promise.all([
    spawnApp('executor', { ...peers, OWNER_ID: 'auth-exec' }),
    spawnApp('reconciler', {
      ...peers,
      RAIL_STUB_URL: nowhere,
      PAYDB_URL: await migratedDatabase('paydb'),
      PROXYDB_URL: await migratedDatabase('proxydb'),
    }),
  ]);
  apps.push(executor, reconciler);
  byName = {
    'lock-server': lockServer,
    'payment-resource': payments,
    'rail-proxy': proxy,
    executor,
    reconciler,
  };
});

afterAll(async () => {
  await Promise.all(apps.map((a) => a.stop()));
});

interface Endpoint {
  service: string;
  method: 'GET' | 'POST' | 'DELETE';
  path: () => string;
  body?: () => unknown;
  headers?: Record<string, string>;
}

const fenced = { 'x-fencing-token': '5', 'x-idempotency-key': 'auth-matrix-1' };
const ENDPOINTS: Endpoint[] = [
  {
    service: 'lock-server',
    method: 'POST',
    path: () => '/v1/sessions',
    body: () => ({ ownerId: 'w', ttlMillis: 5000 }),
  },
  { service: 'lock-server', method: 'POST', path: () => `/v1/sessions/${SID}/heartbeat` },
  { service: 'lock-server', method: 'DELETE', path: () => `/v1/sessions/${SID}` },
  {
    service: 'lock-server',
    method: 'POST',
    path: () => '/v1/locks/payout:a/acquire',
    body: () => ({ sessionId: SID }),
  },
  {
    service: 'lock-server',
    method: 'POST',
    path: () => '/v1/locks/payout:a/renew',
    body: () => ({ sessionId: SID }),
    headers: { 'x-fencing-token': '5' },
  },
  {
    service: 'lock-server',
    method: 'DELETE',
    path: () => '/v1/locks/payout:a',
    headers: { 'x-fencing-token': '5' },
  },
  { service: 'lock-server', method: 'GET', path: () => '/v1/locks/payout:a' },
  {
    service: 'lock-server',
    method: 'POST',
    path: () => '/v1/locks/payout:a/revoke',
    body: () => ({ operator: 'op', reason: 'a test of auth' }),
  },
  { service: 'lock-server', method: 'GET', path: () => '/v1/revocations' },
  { service: 'payment-resource', method: 'GET', path: () => '/v1/payouts?state=PENDING' },
  { service: 'payment-resource', method: 'GET', path: () => `/v1/payouts/${payoutId}` },
  {
    service: 'payment-resource',
    method: 'POST',
    path: () => `/v1/payouts/${payoutId}/claim`,
    body: () => ({ expectedState: 'PENDING' }),
    headers: fenced,
  },
  {
    service: 'payment-resource',
    method: 'POST',
    path: () => `/v1/payouts/${payoutId}/rail-outcome`,
    body: () => ({ outcome: 'SUBMITTED' }),
    headers: fenced,
  },
  {
    service: 'payment-resource',
    method: 'POST',
    path: () => `/v1/payouts/${payoutId}/post`,
    body: () => ({}),
    headers: fenced,
  },
  {
    service: 'payment-resource',
    method: 'POST',
    path: () => `/v1/payouts/${payoutId}/abandon`,
    body: () => ({ operator: 'op', reason: 'a test of auth' }),
  },
  {
    service: 'payment-resource',
    method: 'POST',
    path: () => `/v1/payouts/${payoutId}/resolve`,
    body: () => ({ resolution: 'NOT_FOUND', evidence: 'x' }),
    headers: fenced,
  },
  { service: 'payment-resource', method: 'GET', path: () => `/v1/accounts/${accountId}` },
  {
    service: 'payment-resource',
    method: 'POST',
    path: () => `/v1/accounts/${accountId}/fence-floor`,
    body: () => ({ floor: '100' }),
    headers: { 'x-operator': 'op' },
  },
  {
    service: 'rail-proxy',
    method: 'POST',
    path: () => '/v1/rail/submissions',
    body: () => ({ payoutId }),
    headers: fenced,
  },
  { service: 'rail-proxy', method: 'GET', path: () => `/v1/rail/submissions/${payoutId}` },
  {
    service: 'rail-proxy',
    method: 'POST',
    path: () => `/v1/rail/high-water/${accountId}/floor`,
    body: () => ({ floor: '100' }),
    headers: { 'x-operator': 'op' },
  },
  { service: 'reconciler', method: 'GET', path: () => '/v1/reconciler/report' },
  // The executor serves no API: any other path is refused before it could be a 404.
  { service: 'executor', method: 'GET', path: () => '/v1/anything' },
];

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

type BadToken = [
  name: string,
  header: (audience: string) => Promise<string | undefined>,
  message: string,
];

function signedWith(alg: 'HS256', secret: Uint8Array, kid: string, audience: string) {
  return new SignJWT({})
    .setProtectedHeader({ alg, kid })
    .setIssuer(DEV_ISSUER)
    .setSubject('operator')
    .setAudience(audience)
    .setExpirationTime('5m')
    .sign(secret);
}

const nowSec = () => Math.floor(Date.now() / 1000);
const BAD_TOKENS: BadToken[] = [
  ['no token', async () => undefined, 'Authorization header missing'],
  [
    'an expired token',
    (aud) => testBearer('operator', aud, { nowSec: nowSec() - 700 }),
    'token expired',
  ],
  [
    'a token for another service',
    (aud) => testBearer('operator', aud === 'rail-proxy' ? 'lock-server' : 'rail-proxy'),
    'token claim aud not accepted',
  ],
  [
    'a bad signature',
    async (aud) => {
      const [h, p] = (await testBearer('operator', aud)).split('.');
      const [, , s] = (await testBearer('someone-else', aud)).split('.');
      return `${h}.${p}.${s}`;
    },
    'token signature does not verify',
  ],
  [
    'an unknown key id',
    async (aud) => {
      const other = await DevIssuer.open(scratchDir('dlock-other-issuer-'));
      return `Bearer ${await other.mint('operator', aud)}`;
    },
    'token key id unknown',
  ],
  [
    'alg none',
    async (aud) => {
      const payload = { iss: DEV_ISSUER, sub: 'operator', aud, exp: nowSec() + 60 };
      return `Bearer ${base64url.encode(JSON.stringify({ alg: 'none' }))}.${base64url.encode(JSON.stringify(payload))}.AA`;
    },
    'token algorithm not accepted',
  ],
  [
    'HS256 keyed with the published public key',
    async (aud) => {
      const jwks = JSON.parse(readFileSync((await testIssuer()).jwksPath, 'utf8')) as {
        keys: JWK[];
      };
      const secret = new TextEncoder().encode(JSON.stringify(jwks.keys[0]));
      return `Bearer ${await signedWith('HS256', secret, jwks.keys[0].kid!, aud)}`;
    },
    'token algorithm not accepted',
  ],
  [
    'a huge token',
    async () => `Bearer ${'a'.repeat(TOKEN_BYTES_MAX)}.b.c`,
    `token longer than ${TOKEN_BYTES_MAX} bytes`,
  ],
  [
    'another scheme',
    async () => 'Basic b3BlcmF0b3I6cGFzcw==',
    'Authorization must be "Bearer <JWT>"',
  ],
];

describe('every endpoint of every service refuses a request without a valid token for it', () => {
  it.each(BAD_TOKENS)(
    '%s → 401 UNAUTHENTICATED with the envelope, nothing changed',
    async (_name, header, message) => {
      const before = await snapshot();
      for (const e of ENDPOINTS) {
        const authorization = await header(e.service);
        const res = await http(e.method, `${byName[e.service].url}${e.path()}`, {
          headers: { ...e.headers, ...(authorization === undefined ? {} : { authorization }) },
          body: e.body?.(),
          noAuth: authorization === undefined,
        });
        expect({
          endpoint: `${e.service} ${e.method} ${e.path()}`,
          status: res.status,
          body: res.body,
        }).toEqual({
          endpoint: `${e.service} ${e.method} ${e.path()}`,
          status: 401,
          body: { code: 'UNAUTHENTICATED', message, retrySafe: true, traceId: TRACE_ID },
        });
      }
      expect(await snapshot()).toBe(before);
    },
  );

  it('an X-Owner-Id other than the token subject is 403 FORBIDDEN, nothing changed', async () => {
    const before = await snapshot();
    for (const e of ENDPOINTS) {
      const res = await http(e.method, `${byName[e.service].url}${e.path()}`, {
        headers: {
          ...e.headers,
          'x-owner-id': 'worker-b',
          authorization: await testBearer('worker-a', e.service),
        },
        body: e.body?.(),
      });
      expect({
        endpoint: `${e.service} ${e.method} ${e.path()}`,
        status: res.status,
        body: res.body,
      }).toEqual({
        endpoint: `${e.service} ${e.method} ${e.path()}`,
        status: 403,
        body: {
          code: 'FORBIDDEN',
          message: 'X-Owner-Id is not the authenticated identity',
          retrySafe: false,
          details: { field: 'X-Owner-Id' },
          traceId: TRACE_ID,
        },
      });
    }
    expect(await snapshot()).toBe(before);
  });

  it('a session opened for an owner other than the token subject is 403, and none is opened', async () => {
    const before = await snapshot();
    const res = await http('POST', `${byName['lock-server'].url}/v1/sessions`, {
      headers: { authorization: await testBearer('worker-a', 'lock-server') },
      body: { ownerId: 'worker-b' },
    });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({
      code: 'FORBIDDEN',
      message: 'ownerId is not the authenticated identity',
      retrySafe: false,
      details: { field: 'ownerId' },
      traceId: TRACE_ID,
    });
    expect(await snapshot()).toBe(before);
  });

  it('the right identity gets today’s answers', async () => {
    const lock = byName['lock-server'].url;
    const opened = await http('POST', `${lock}/v1/sessions`, {
      body: { ownerId: 'worker-a' },
      headers: { 'x-owner-id': 'worker-a' },
    });
    expect(opened.status).toBe(201);
    expect(opened.body.ownerId).toBe('worker-a');
    expect((await http('GET', `${lock}/v1/locks/payout:never`)).status).toBe(404);
    const payout = await http('GET', `${byName['payment-resource'].url}/v1/payouts/${payoutId}`);
    expect(payout.status).toBe(200);
    expect(payout.body.state).toBe('PENDING');
    expect((await http('GET', `${byName.reconciler.url}/v1/reconciler/report`)).status).toBe(200);
  });

  it('health and metrics stay open to probes and scrapers', async () => {
    for (const app of apps) {
      for (const p of ['/health/live', '/metrics']) {
        const res = await http('GET', `${app.url}${p}`, { noAuth: true });
        expect({ app: app.name, p, status: res.status }).toEqual({ app: app.name, p, status: 200 });
      }
      const ready = await http('GET', `${app.url}/health/ready`, { noAuth: true });
      expect([200, 503]).toContain(ready.status);
    }
  });

  it('each serves its OpenAPI document without a token: the committed docs/openapi/<app>.json', async () => {
    for (const app of apps) {
      const res = await http('GET', `${app.url}/openapi.json`, { noAuth: true });
      const committed = readFileSync(
        path.join(__dirname, '..', '..', 'docs', 'openapi', `${app.name}.json`),
        'utf8',
      );
      expect({ app: app.name, status: res.status, type: res.headers.get('content-type') }).toEqual({
        app: app.name,
        status: 200,
        type: 'application/json; charset=utf-8',
      });
      expect(JSON.parse(res.text)).toEqual(JSON.parse(committed));
    }
  });

  it('each refusal is counted on the refusing service (auth_refusals_total)', async () => {
    const text = (await http('GET', `${byName['payment-resource'].url}/metrics`)).text;
    expect(text).toMatch(/auth_refusals_total\{refusal="unauthenticated"\} [1-9]/);
    expect(text).toMatch(/auth_refusals_total\{refusal="forbidden"\} [1-9]/);
  });
});
