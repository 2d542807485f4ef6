import {
  metricSum,
  migratedDatabase,
  readerUrl,
  scrapeMetrics,
  spawnApp,
  waitFor,
  withClient,
  type RunningApp,
} from '@dlock/testing';

/**
 * reconciler_last_check_timestamp_seconds moves only when every detective
 * check ran: DlockReconcilerChecksStale (docs/operations.md "Alerts") must
 * fire while a check keeps failing, not just while the loop stops.
 */
jest.setTimeout(90_000);

let proxydb: string;
let reconciler: RunningApp;
let spawnedAt: number;

beforeAll(async () => {
  const [paydb, proxy] = await Promise.all([
    migratedDatabase('paydb'),
    migratedDatabase('proxydb'),
  ]);
  proxydb = proxy;
  // No peer is ever called here: only the detective checks (read-only SQL) run.
  spawnedAt = Date.now() / 1000;
  reconciler = await spawnApp('reconciler', {
    LOCK_SERVER_URL: 'http://127.0.0.1:9',
    PAYMENT_RESOURCE_URL: 'http://127.0.0.1:9',
    RAIL_STUB_URL: 'http://127.0.0.1:9',
    PAYDB_URL: readerUrl(paydb),
    PROXYDB_URL: readerUrl(proxydb),
    OWNER_ID: 'staleness-test',
    RECONCILER_CHECK_INTERVAL_MS: '200',
  });
});

afterAll(() => reconciler?.stop());

/** Every series of `name` summed (the check errors are counted by check). */
async function sample(name: string): Promise<number> {
  return metricSum(await scrapeMetrics(reconciler.url), name);
}

test('from the start, no staleness gauge reads 1970: the stale alerts count from the start', async () => {
  for (const gauge of [
    'reconciler_last_check_timestamp_seconds',
    'reconciler_rail_sweep_last_completed_timestamp_seconds',
    'dlock_audit_chain_last_verified_timestamp_seconds',
  ]) {
    expect([gauge, await sample(gauge)]).toEqual([gauge, expect.any(Number)]);
    expect([gauge, (await sample(gauge)) >= Math.floor(spawnedAt)]).toEqual([gauge, true]);
  }
});

test('a run with a failing check leaves the last-check timestamp where it was', async () => {
  await waitFor(
    async () => (await sample('reconciler_last_check_timestamp_seconds')) > 0,
    20_000,
    'a first complete run',
  );
  // The token_regression check reads rail_high_water: take it away.
  await withClient(proxydb, (c) =>
    c.query('ALTER TABLE rail_high_water RENAME TO rail_high_water_away'),
  );
  const errorsBefore = await sample('reconciler_check_errors_total');
  await waitFor(
    async () => (await sample('reconciler_check_errors_total')) >= errorsBefore + 1,
    20_000,
    'a failing run',
  );
  const stuck = await sample('reconciler_last_check_timestamp_seconds');
  await waitFor(
    async () => (await sample('reconciler_check_errors_total')) >= errorsBefore + 4,
    20_000,
    'more failing runs',
  );
  expect(await sample('reconciler_last_check_timestamp_seconds')).toBe(stuck);

  await withClient(proxydb, (c) =>
    c.query('ALTER TABLE rail_high_water_away RENAME TO rail_high_water'),
  );
  await waitFor(
    async () => (await sample('reconciler_last_check_timestamp_seconds')) > stuck,
    20_000,
    'a complete run again',
  );
});
