import {
  http,
  migratedDatabase,
  spawnApp,
  testBearer,
  waitFor,
  type RunningApp,
} from '@dlock/testing';
import { LockApi, TRACE_ID } from '../support/lock-client';

const IN_FLIGHT_MAX = 4;
/** Longer than the test: the waiters stay in flight until the test lets them go. */
const WAIT_MS = 20_000;
const FLOOD = 20;
const FORGED = 5;

/** The value of one sample in a Prometheus text exposition, 0 when absent. */
function sample(metrics: string, line: string): number {
  const found = metrics.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? 0 : Number(found.slice(line.length + 1));
}

/**
 * An identity's requests in flight are capped, and its excess is refused
 * before any signature is checked (docs/lock-server.md, "Limits"): against the
 * built process over real HTTP and PostgreSQL, an identity holding its
 * allowance of waiting acquires gets 429 for everything else it sends at once,
 * with the server's count of token verifications unmoved, while its
 * heartbeats and releases, and every other identity, are served.
 */
describe('lock-server process: requests in flight per identity, shed before authentication', () => {
  let server: RunningApp;
  let api: LockApi;

  beforeAll(async () => {
    server = await spawnApp('lock-server', {
      LOCK_BACKEND: 'pg',
      LOCKDB_URL: await migratedDatabase('lockdb'),
      // A loaded test machine is slow, not down: no 503 for a slow connect or statement.
      LOCKDB_CONNECT_TIMEOUT_MS: '10000',
      LOCKDB_STATEMENT_TIMEOUT_MS: '10000',
      LOCK_WAITERS_PER_OWNER_MAX: String(IN_FLIGHT_MAX),
      LOCK_REQUESTS_IN_FLIGHT_PER_OWNER_MAX: String(IN_FLIGHT_MAX),
    });
    api = new LockApi(server.url);
  });
  afterAll(() => server.stop());

  const metrics = async () => (await http('GET', `${server.url}/metrics`, { noAuth: true })).text;
  const shed = {
    status: 429,
    body: {
      code: 'CONTENTION_EXCEEDED',
      message: 'too many requests of this identity in flight',
      retrySafe: true,
      retryAfterMillis: 500,
      details: { reason: 'in-flight-per-owner', limit: IN_FLIGHT_MAX },
      traceId: TRACE_ID,
    },
  };

  it("sheds the identity's excess, forged tokens naming it included, without verifying a token; others are served", async () => {
    const holder = await api.session('flood', 30_000);
    const held = await api.acquire('adm:1', holder, 'flood', { ttlMillis: 30_000 });
    expect(held.status).toBe(200);
    const waiter = await api.session('flood', 30_000);
    const waits = Array.from({ length: IN_FLIGHT_MAX }, () =>
      api.acquire('adm:1', waiter, 'flood', { waitMillis: WAIT_MS }),
    );
    await waitFor(
      async () => (await api.inspect('adm:1')).body.waiterCount === IN_FLIGHT_MAX,
      WAIT_MS,
      'the waiters',
    );

    const before = await metrics();
    const verifiedBefore = sample(before, 'auth_token_verifications_total');
    expect(verifiedBefore).toBeGreaterThan(0);
    const acquire = (authorization?: string) =>
      http('POST', `${server.url}/v1/locks/adm:2/acquire`, {
        headers: { 'x-owner-id': 'flood', ...(authorization ? { authorization } : {}) },
        body: { sessionId: waiter },
      });
    // The same token, and tokens that claim to be `flood` but carry a signature nobody made.
    const genuine = await testBearer('flood', 'lock-server');
    const forged = Array.from(
      { length: FORGED },
      (_, i) => `${genuine.slice(0, genuine.lastIndexOf('.') + 1)}forged${i}signature`,
    );
    const answers = await Promise.all([
      ...Array.from({ length: FLOOD }, () => acquire()),
      ...forged.map((token) => acquire(token)),
    ]);
    for (const res of answers) expect({ status: res.status, body: res.body }).toEqual(shed);

    // No token was checked for any of them: a forged one would have been 401 if it had been.
    const after = await metrics();
    expect(sample(after, 'auth_token_verifications_total')).toBe(verifiedBefore);
    expect(
      sample(after, 'http_requests_shed_total{reason="in-flight-per-owner"}') -
        sample(before, 'http_requests_shed_total{reason="in-flight-per-owner"}'),
    ).toBe(FLOOD + FORGED);
    // Nothing was granted.
    expect((await api.inspect('adm:2')).status).toBe(404);

    // Its heartbeats are still served, and so is every other identity.
    expect((await api.heartbeat(holder, 'flood')).status).toBe(200);
    const calm = await api.session('calm', 30_000);
    expect((await api.acquire('calm:1', calm, 'calm')).status).toBe(200);

    // Giving the key back (a release is never shed) hands it to one waiter: its answer ends
    // its request, and the identity has room for one more.
    expect(
      (await api.release('adm:1', holder, held.body.fencingToken as string, 'flood')).status,
    ).toBe(204);
    const granted = await Promise.race(waits);
    expect(granted.status).toBe(200);
    await waitFor(
      async () => (await acquire()).status === 200,
      WAIT_MS,
      'room for one more request of flood',
    );
    // A forged token, once it is not shed, is refused as before.
    const refused = await acquire(forged[0]);
    expect([refused.status, refused.body.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect((await api.closeSession(waiter, 'flood')).status).toBe(204);
    await Promise.all(waits);
  });
});
