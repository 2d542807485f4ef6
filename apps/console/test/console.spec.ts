import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { LockClient, type LockHandle, type LockSession } from '@dlock/lock-client';
import { payoutLockKey, railClientRef } from '@dlock/payout-contract';
import {
  REPO_ROOT,
  http,
  seedFundedAccount,
  seedPendingPayout,
  spawnApp,
  testTokenProvider,
  waitFor,
  type RunningApp,
} from '@dlock/testing';
import {
  ledgerRows,
  metric,
  scriptStub,
  startExecutor,
  startServices,
  submissions,
  waitForState,
  type Services,
} from '../../executor/test/support';
import { signInOnPage, waitInPage } from './support';

/**
 * The operator console in a real browser (Debian's chromium, driven by
 * playwright-core) against the real system: lock-server, payment-resource,
 * rail-stub, rail-proxy and an executor as processes, the console reading as
 * itself and acting for `operator`, signed in on the page. Every wait is a
 * condition with a deadline.
 */
jest.setTimeout(120_000);

const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
const OUTPUT_DIR = path.join(REPO_ROOT, '.tmp', 'console');
const WAIT_MS = 30_000;
/**
 * How long a slow rail call keeps the executor's lock: long enough for the page to show the lock,
 * the click and one reconciler pass, so the revoke lands while the call is in flight.
 */
const SLOW_CALL_MS = 8_000;
/** The rail read budget of proxy and executor: above the slow call, so it never turns ambiguous. */
const RAIL_READ_TIMEOUT_MS = '12000';

let s: Services;
let executor: RunningApp;
let reconciler: RunningApp;
let consoleApp: RunningApp;
let browser: Browser;
let page: Page;
let accountId: string;
let firstPayout: string;

beforeAll(async () => {
  s = await startServices({ RAIL_READ_TIMEOUT_MS });
  accountId = await seedFundedAccount(s.paydb);
  firstPayout = await seedPendingPayout(s.paydb, accountId);
  for (let i = 0; i < 4; i++) await seedPendingPayout(s.paydb, accountId);
  [executor, reconciler, consoleApp, browser] = await Promise.all([
    // The lease covers one submit under the longer rail budget (docs/executor.md, "Lease discipline").
    startExecutor(s, 'executor-1', { RAIL_READ_TIMEOUT_MS, LOCK_DEFAULT_TTL_MS: '30000' }),
    // As under npm start: it raises both guards to a revocation's floor (docs/operations.md).
    spawnApp('reconciler', {
      LOCK_SERVER_URL: s.lockServer.url,
      PAYMENT_RESOURCE_URL: s.payments.url,
      RAIL_STUB_URL: s.stub.url,
      RAIL_PROXY_URL: s.proxy.url,
      PAYDB_URL: s.paydb,
      PROXYDB_URL: s.proxydb,
      RECONCILER_FENCING_INTERVAL_MS: '200',
      RECONCILER_REVOCATION_SETTLE_MS: '0',
      // It never resolves an ambiguous payout here: the resolve test does that through the page.
      RECONCILER_INTERVAL_MS: '3600000',
    }),
    spawnApp('console', {
      LOCK_SERVER_URL: s.lockServer.url,
      PAYMENT_RESOURCE_URL: s.payments.url,
      RAIL_PROXY_URL: s.proxy.url,
      CONSOLE_EVENT_POLL_MS: '500',
      CONSOLE_CALL_TIMEOUT_MS: '5000',
    }),
    chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }),
  ]);
  // A laptop's screen (docs/console.md, "The panels"): every click below happens at this width.
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(consoleApp.url);
  await signInOnPage(page, 'operator');
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([consoleApp?.stop(), executor?.stop(), reconciler?.stop()]);
  await s?.stop();
});

async function postedOnPage(): Promise<number> {
  return Number(await page.locator('[data-testid=posted-count] b').textContent());
}

/** A lock held by a worker of the test's own, long enough to outlive the test. */
async function holdLock(key: string): Promise<{ session: LockSession; handle: LockHandle }> {
  const client = new LockClient({
    baseUrl: s.lockServer.url,
    ownerId: 'stuck-worker',
    token: testTokenProvider('stuck-worker'),
    sessionTtlMs: 60_000,
    lockTtlMs: 60_000,
  });
  const session = await client.openSession();
  return { session, handle: await session.acquire(key) };
}

async function lockOnServer(key: string): Promise<{ held: boolean; fencingToken?: string }> {
  const res = await http('GET', `${s.lockServer.url}/v1/locks/${encodeURIComponent(key)}`);
  expect(res.status).toBe(200);
  return res.body as { held: boolean; fencingToken?: string };
}

async function revokeOnPage(key: string, token: string, reason: string): Promise<void> {
  await page.locator(`#locks tr[data-key="${key}"] button`).click();
  await expect(page.locator('#revoke-key').inputValue()).resolves.toBe(key);
  await expect(page.locator('#revoke-token').inputValue()).resolves.toBe(token);
  await page.locator('#revoke-reason').fill(reason);
  await page.locator('#revoke-submit').click();
}

it('shows who is signed in and payouts moving', async () => {
  await expect(page.locator('[data-testid=operator]').textContent()).resolves.toBe(
    'signed in as operator',
  );
  await page.locator('[data-testid=posted-count]').waitFor({ timeout: WAIT_MS });
  const before = await postedOnPage();
  for (let i = 0; i < 5; i++) await seedPendingPayout(s.paydb, accountId);
  // Evaluated in the page (a string: the test's TypeScript has no DOM types).
  await waitInPage(
    page,
    `Number(document.querySelector('[data-testid=posted-count] b')?.textContent) > ${before}`,
    WAIT_MS,
  );
  expect(await postedOnPage()).toBeGreaterThan(before);
});

it('an invalid revoke shows the lock-server refusal and changes nothing; a valid one fences the holder', async () => {
  const key = `payout:${await seedFundedAccount(s.paydb)}`;
  const { session, handle } = await holdLock(key);
  try {
    const token = handle.fencingToken.toString();
    const row = page.locator(`#locks tr[data-key="${key}"]`);
    await row.waitFor({ timeout: WAIT_MS });
    await expect(row.locator('td.token').textContent()).resolves.toBe(token);

    await revokeOnPage(key, token, 'short');
    const error = page.locator('#action-result.error [data-testid=error-code]');
    await error.waitFor({ timeout: WAIT_MS });
    await expect(error.textContent()).resolves.toBe('VALIDATION_FAILED');
    await expect(page.locator('[data-testid=error-message]').textContent()).resolves.toMatch(
      /reason/,
    );
    await expect(lockOnServer(key)).resolves.toMatchObject({
      held: true,
      ownerId: 'stuck-worker',
      fencingToken: token,
    });

    // An expected token the lock has moved past (docs/console.md shows this answer).
    const stale = (handle.fencingToken - 1n).toString();
    await page.locator(`#locks tr[data-key="${key}"] button`).click();
    await page.locator('#revoke-token').fill(stale);
    await page.locator('#revoke-reason').fill('holder stuck on a dead worker');
    await page.locator('#revoke-submit').click();
    await error.filter({ hasText: 'FENCED_OUT' }).waitFor({ timeout: WAIT_MS });
    await expect(page.locator('[data-testid=error-message]').textContent()).resolves.toBe(
      'expectedToken is not the live grant of this key',
    );
    await expect(lockOnServer(key)).resolves.toMatchObject({ held: true, fencingToken: token });

    await revokeOnPage(key, token, 'holder stuck on a dead worker');
    const result = page.locator('#action-result.ok [data-testid=result-text]');
    await result.waitFor({ timeout: WAIT_MS });
    const text = (await result.textContent()) ?? '';
    expect(text).toMatch(
      new RegExp(`^revoked ${key}: token ${token} revoked, new token floor \\d+$`),
    );
    const floor = /new token floor (\d+)$/.exec(text)?.[1];
    expect(floor).toBeDefined();
    expect(BigInt(floor!)).toBeGreaterThan(handle.fencingToken);
    await expect(lockOnServer(key)).resolves.toMatchObject({ held: false });
    await page
      .locator(`#feed li[data-event=lock_revoked][data-service=lock-server]`)
      .filter({ hasText: key })
      .first()
      .waitFor({ timeout: WAIT_MS });
    await row.waitFor({ state: 'detached', timeout: WAIT_MS });
    mkdirSync(OUTPUT_DIR, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT_DIR, 'overview.png') });
    if (process.env.DLOCK_UPDATE_CONSOLE_PNG === '1')
      await page.screenshot({ path: path.join(REPO_ROOT, 'docs', 'console.png') });
  } finally {
    await session.close();
  }
});

it('a refused abandon shows the payment-resource error and leaves the payout as it was', async () => {
  await waitFor(
    async () =>
      (await http('GET', `${s.payments.url}/v1/payouts/${firstPayout}`)).body.state === 'POSTED',
    WAIT_MS,
    'the first payout to be POSTED',
  );
  await page.locator('#payout-id').fill(firstPayout);
  await page.locator('#payout-reason').fill('customer asked to cancel');
  await page.locator('#abandon').click();
  const code = page.locator('#action-result.error [data-testid=error-code]');
  await code.waitFor({ timeout: WAIT_MS });
  // the same request made directly: the page shows exactly the API's refusal
  const direct = await http('POST', `${s.payments.url}/v1/payouts/${firstPayout}/abandon`, {
    body: { operator: 'operator', reason: 'customer asked to cancel' },
  });
  expect(direct.status).toBeGreaterThanOrEqual(400);
  await expect(code.textContent()).resolves.toBe(direct.body.code);
  await expect(page.locator('[data-testid=error-message]').textContent()).resolves.toBe(
    direct.body.message,
  );
  expect((await http('GET', `${s.payments.url}/v1/payouts/${firstPayout}`)).body.state).toBe(
    'POSTED',
  );
});

/** The rail's own record (S2) of one payout: every transfer booked under its client reference. */
async function railTransfers(payoutId: string): Promise<{ railReference: string }[]> {
  const res = await http('GET', `${s.stub.url}/lookup?clientRef=${railClientRef(payoutId)}`);
  expect(res.status).toBe(200);
  return (res.body as { transfers: { railReference: string }[] }).transfers;
}

/** Where an event of the feed sits on the page: 0 is the newest. */
function feedIndex(selector: string): Promise<number> {
  return page.evaluate<number>(
    `[...document.querySelectorAll('#feed li')].findIndex((li) => li.matches(${JSON.stringify(selector)}))`,
  );
}

it('revoking a payout lock held through a slow rail call fences its holder, and the payout is paid once', async () => {
  const account = await seedFundedAccount(s.paydb);
  const key = payoutLockKey(account);
  const fencedBefore = await metric(executor.url, 'executor_payout_attempts_total', {
    result: 'fenced_account',
  });
  await scriptStub(s.stub.url, { slowRate: 1, slowLatencyMs: SLOW_CALL_MS });
  let payoutId: string;
  let token: string;
  try {
    payoutId = await seedPendingPayout(s.paydb, account);
    // The executor's lock on the page, and its submission at the rail with no answer yet.
    const row = page.locator(`#locks tr[data-key="${key}"]`);
    await row.waitFor({ timeout: WAIT_MS });
    await expect(row.getAttribute('data-owner')).resolves.toBe('executor-1');
    token = (await row.locator('td.token').textContent()) ?? '';
    await waitFor(
      async () => (await submissions(s.proxydb, payoutId)).length === 1,
      WAIT_MS,
      'the rail call in flight',
    );
    await revokeOnPage(key, token, 'demo: fence the holder mid rail call');
  } finally {
    await scriptStub(s.stub.url, { slowRate: 0 });
  }
  const result = page.locator('#action-result.ok [data-testid=result-text]');
  await result.waitFor({ timeout: WAIT_MS });
  expect(await result.textContent()).toMatch(
    new RegExp(`^revoked ${key}: token ${token} revoked, new token floor \\d+$`),
  );
  // Revoked while the holder still waited for the rail: its call has no outcome yet.
  expect(await submissions(s.proxydb, payoutId)).toEqual([
    { outcome: null, presented_token: token, owner_id: 'executor-1' },
  ]);

  const revoked = `#feed li[data-event=lock_revoked][data-service=lock-server]`;
  await page.locator(revoked).filter({ hasText: key }).first().waitFor({ timeout: WAIT_MS });
  // The holder's next write after the rail answered (P6 ACKED under the revoked token) is refused.
  const fenced = `#feed li[data-event=fenced_out][data-service=payment-resource]`;
  await page
    .locator(fenced)
    .filter({ hasText: `resourceId=${account}` })
    .filter({ hasText: `presentedToken=${token} ` })
    .first()
    .waitFor({ timeout: WAIT_MS });
  expect(await feedIndex(fenced)).toBeLessThan(await feedIndex(revoked));
  expect(
    await metric(executor.url, 'executor_payout_attempts_total', { result: 'fenced_account' }),
  ).toBe(fencedBefore + 1);

  // A fresh holder finishes the payout from the proxy's record, never submitting again: paid once.
  await waitForState(s.paydb, payoutId, ['POSTED'], WAIT_MS);
  const transfers = await railTransfers(payoutId);
  expect(transfers).toHaveLength(1);
  expect(await submissions(s.proxydb, payoutId)).toEqual([
    { outcome: 'ACKED', presented_token: token, owner_id: 'executor-1' },
  ]);
  expect(await ledgerRows(s.paydb, payoutId)).toBe(2);
  const payout = await http('GET', `${s.payments.url}/v1/payouts/${payoutId}`);
  expect(payout.body).toMatchObject({ state: 'POSTED', railReference: transfers[0].railReference });
  expect(BigInt(payout.body.tokenStamp as string)).toBeGreaterThan(BigInt(token));
});

/** P8 exactly as the console sends it, under a lock of the test's own: the API's own answer. */
async function resolveDirectly(payoutId: string, account: string, body: Record<string, unknown>) {
  const session = await new LockClient({
    baseUrl: s.lockServer.url,
    ownerId: 'operator',
    token: testTokenProvider('operator'),
  }).openSession();
  try {
    const handle = await session.acquire(payoutLockKey(account));
    try {
      return await http('POST', `${s.payments.url}/v1/payouts/${payoutId}/resolve`, {
        headers: {
          'x-fencing-token': handle.fencingToken.toString(),
          'x-owner-id': 'operator',
          'x-idempotency-key': `payout-${payoutId}`,
        },
        body,
      });
    } finally {
      await handle.release();
    }
  } finally {
    await session.close();
  }
}

it('resolves an ambiguous payout as ACKED from the page; a refused resolve shows the API error', async () => {
  const account = await seedFundedAccount(s.paydb);
  // A 500 from a rail that booked the transfer all the same: the payout is quarantined.
  await scriptStub(s.stub.url, { script: ['error-accepted'] });
  const payoutId = await seedPendingPayout(s.paydb, account);
  await waitForState(s.paydb, payoutId, ['RAIL_AMBIGUOUS'], WAIT_MS);
  const [transfer] = await railTransfers(payoutId);
  expect(transfer).toBeDefined();
  // P8 is written on the proxy's receipt of the rail's record, which a settled transfer earns
  // (docs/rail.md, "Receipts"): the stub settles it RAIL_STUB_SETTLEMENT_WINDOW_MS after booking.
  await waitFor(
    async () =>
      (await http('GET', `${s.proxy.url}/v1/rail/submissions/${payoutId}/evidence`)).body
        ?.railReceipt,
    WAIT_MS,
    'the rail-proxy to receipt the settled transfer',
  );

  const item = page.locator(`#ambiguous .amb[data-payout="${payoutId}"]`);
  await item.waitFor({ timeout: WAIT_MS });
  await expect(item.locator('.sub').first().textContent()).resolves.toMatch(/TIMEOUT/);
  await item.locator('button').click();
  await expect(page.locator('#payout-id').inputValue()).resolves.toBe(payoutId);
  const evidence = `rail lookup shows ${transfer.railReference}`;
  await page.locator('#payout-reason').fill(evidence);
  await page.locator('#payout-railref').fill(transfer.railReference);
  await page.locator('#resolve-acked').click();
  const result = page
    .locator('#action-result.ok [data-testid=result-text]')
    .filter({ hasText: payoutId });
  await result.waitFor({ timeout: WAIT_MS });
  await expect(result.textContent()).resolves.toBe(`payout ${payoutId} is now RAIL_ACKED`);
  const view = await http('GET', `${s.payments.url}/v1/payouts/${payoutId}`);
  expect(view.body.submissions).toContainEqual(
    expect.objectContaining({
      outcome: 'RESOLVED_ACKED',
      railReference: transfer.railReference,
      ownerId: 'operator',
    }),
  );
  await waitForState(s.paydb, payoutId, ['POSTED'], WAIT_MS);
  expect(await railTransfers(payoutId)).toHaveLength(1);
  expect(await ledgerRows(s.paydb, payoutId)).toBe(2);

  // Once more, now that it is POSTED: refused, and the page shows the API's own refusal.
  await page.locator('#resolve-acked').click();
  const code = page.locator('#action-result.error [data-testid=error-code]');
  await code.waitFor({ timeout: WAIT_MS });
  const direct = await resolveDirectly(payoutId, account, {
    resolution: 'ACKED',
    evidence,
    railReference: transfer.railReference,
  });
  expect(direct.status).toBe(409);
  expect(direct.body.code).toBe('PAYOUT_NOT_CLAIMABLE');
  await expect(code.textContent()).resolves.toBe(direct.body.code);
  await expect(page.locator('[data-testid=error-message]').textContent()).resolves.toBe(
    direct.body.message,
  );
  expect((await http('GET', `${s.payments.url}/v1/payouts/${payoutId}`)).body.state).toBe('POSTED');
});

it('shows a service it cannot reach as unreachable and keeps serving', async () => {
  await s.proxy.stop();
  await page.locator('#sources [data-service=rail-proxy].down').waitFor({ timeout: WAIT_MS });
  await page.locator('#fences-note .unreachable').waitFor({ timeout: WAIT_MS });
  // the rest of the overview still comes from the services that answer
  await page.locator('[data-testid=posted-count]').waitFor({ timeout: WAIT_MS });
});
