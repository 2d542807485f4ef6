import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  DEV_POLICY_PATH,
  http,
  migratedDatabase,
  spawnApp,
  testBearer,
  type RunningApp,
} from '@dlock/testing';
import { FakeClock } from '../src/nemesis/clock.nemesis';

/**
 * Clock faults (docs/harness.md, "Clock faults"): lock-server replicas whose
 * clocks are skewed, jumped and slowed really read other times, and still
 * grant one holder at a time with rising tokens: on the pg backend a lease is
 * decided by the database's clock, never by a replica's.
 */
jest.setTimeout(90_000);

const HOUR_MS = 3_600_000;
const LEASE_MS = 1_500;
let dir: string;
let skewed: RunningApp;
let slow: RunningApp;
/** When the half-speed replica was spawned: its clock runs at half rate from its start. */
let slowSpawnedMs: number;
let skewClock: FakeClock;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'dlock-clocks-'));
  const lockdb = await migratedDatabase('lockdb');
  skewClock = new FakeClock(path.join(dir, 'skewed'), { kind: 'skew', offsetMs: HOUR_MS });
  const slowClock = new FakeClock(path.join(dir, 'slow'), { kind: 'rate', factor: 0.5 });
  const env = { AUTH_POLICY: DEV_POLICY_PATH, LOCK_BACKEND: 'pg', LOCKDB_URL: lockdb };
  slowSpawnedMs = Date.now();
  [skewed, slow] = await Promise.all([
    spawnApp('lock-server', { ...env, ...skewClock.env() }),
    spawnApp('lock-server', { ...env, ...slowClock.env() }),
  ]);
});

afterAll(async () => {
  await Promise.all([skewed, slow].filter(Boolean).map((a) => a.stop()));
  rmSync(dir, { recursive: true, force: true });
});

/** The replica's own idea of now: the Date header its HTTP server writes from Date.now(). */
async function replicaNowMs(app: RunningApp): Promise<number> {
  const res = await http('GET', `${app.url}/health/live`, { noAuth: true });
  return Date.parse(res.headers.get('date') ?? '');
}

/**
 * A token minted in the replica's own time: the lease is what these tests are about, and
 * a token from the true clock is refused by a replica whose clock is off by more than the
 * verifier's tolerance (the first test).
 */
async function asOwner(app: RunningApp, owner: string): Promise<Record<string, string>> {
  const nowSec = Math.floor((await replicaNowMs(app)) / 1000);
  return {
    authorization: await testBearer(owner, 'lock-server', { nowSec }),
    'x-owner-id': owner,
  };
}

async function session(app: RunningApp, owner: string): Promise<string> {
  const res = await http('POST', `${app.url}/v1/sessions`, {
    body: { ownerId: owner },
    headers: await asOwner(app, owner),
  });
  expect(res.status).toBe(201);
  return (res.body as { sessionId: string }).sessionId;
}

interface Answer {
  status: number;
  code?: string;
  token?: bigint;
  expiresAt?: number;
}

async function acquire(
  app: RunningApp,
  owner: string,
  sessionId: string,
  key: string,
): Promise<Answer> {
  const res = await http('POST', `${app.url}/v1/locks/${key}/acquire`, {
    body: { sessionId, ttlMillis: LEASE_MS },
    headers: await asOwner(app, owner),
  });
  const body = res.body as { fencingToken?: string; expiresAt?: string; code?: string };
  return {
    status: res.status,
    code: body.code,
    token: body.fencingToken === undefined ? undefined : BigInt(body.fencingToken),
    expiresAt: body.expiresAt === undefined ? undefined : Date.parse(body.expiresAt),
  };
}

test('the faked clocks really differ from the true one', async () => {
  expect((await replicaNowMs(skewed)) - Date.now()).toBeGreaterThan(HOUR_MS - 60_000);
  // A clock at half speed since its start: behind by half of the time it has run. On a fast
  // machine the replica has run for less than the lag asked for: wait until it has run 4 s.
  await sleep(Math.max(0, slowSpawnedMs + 4_000 - Date.now()));
  expect(Date.now() - (await replicaNowMs(slow))).toBeGreaterThan(1_000);
});

test('a replica whose clock is an hour off refuses a true-time token: it fails closed', async () => {
  const res = await http('POST', `${skewed.url}/v1/sessions`, {
    body: { ownerId: 'executor-1' },
    headers: { authorization: await testBearer('executor-1', 'lock-server') },
  });
  expect(res.status).toBe(401);
});

test('a lease is the database clock’s: skewed and slow replicas grant one holder at a time', async () => {
  const key = `payout:clock-${Date.now()}`;
  const [a, b] = await Promise.all([session(skewed, 'executor-1'), session(slow, 'executor-2')]);
  const first = await acquire(skewed, 'executor-1', a, key);
  expect(first).toMatchObject({ status: 200 });
  // The expiry is the database's now + the lease, not the replica's (an hour ahead).
  expect(Math.abs(first.expiresAt! - (Date.now() + LEASE_MS))).toBeLessThan(10_000);
  expect((await acquire(slow, 'executor-2', b, key)).status).toBe(409);

  // Jump the skewed replica back two hours while the lease runs: nothing changes for the lease.
  skewClock.set({ kind: 'jump', offsetMs: -HOUR_MS });
  await new Promise((r) => setTimeout(r, LEASE_MS + 1_200));
  expect((await replicaNowMs(skewed)) - Date.now()).toBeLessThan(-HOUR_MS + 60_000);
  const second = await acquire(slow, 'executor-2', b, key);
  expect(second.status).toBe(200);
  expect(second.token! > first.token!).toBe(true);
  expect((await acquire(skewed, 'executor-1', a, key)).status).toBe(409);
});
