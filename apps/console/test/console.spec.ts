import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { LockClient, type LockHandle, type LockSession } from '@dlock/lock-client';
import {
  REPO_ROOT,
  http,
  seedFundedAccount,
  seedPendingPayout,
  spawnApp,
  testTokenDir,
  testTokenProvider,
  waitFor,
  type RunningApp,
} from '@dlock/testing';
import { startExecutor, startServices, type Services } from '../../executor/test/support';

/**
 * The operator console in a real browser (Debian's chromium, driven by
 * playwright-core) against the real system: lock-server, payment-resource,
 * rail-stub, rail-proxy and an executor as processes, the console acting as
 * the `operator` identity. Every wait is a condition with a deadline.
 */
jest.setTimeout(120_000);

const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
const OUTPUT_DIR = path.join(REPO_ROOT, '.tmp', 'console');
const WAIT_MS = 30_000;

let s: Services;
let executor: RunningApp;
let consoleApp: RunningApp;
let browser: Browser;
let page: Page;
let accountId: string;
let firstPayout: string;

beforeAll(async () => {
  s = await startServices();
  accountId = await seedFundedAccount(s.paydb);
  firstPayout = await seedPendingPayout(s.paydb, accountId);
  for (let i = 0; i < 4; i++) await seedPendingPayout(s.paydb, accountId);
  [executor, consoleApp, browser] = await Promise.all([
    startExecutor(s, 'executor-1'),
    spawnApp('console', {
      AUTH_TOKEN_DIR: await testTokenDir('operator'),
      LOCK_SERVER_URL: s.lockServer.url,
      PAYMENT_RESOURCE_URL: s.payments.url,
      RAIL_PROXY_URL: s.proxy.url,
      CONSOLE_EVENT_POLL_MS: '500',
      CONSOLE_CALL_TIMEOUT_MS: '5000',
    }),
    chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }),
  ]);
  page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  await page.goto(consoleApp.url);
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([consoleApp?.stop(), executor?.stop()]);
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

it('shows who it acts as and payouts moving', async () => {
  await page
    .locator('[data-testid=operator]', { hasText: /^acting as operator$/ })
    .waitFor({ timeout: WAIT_MS });
  await page.locator('[data-testid=posted-count]').waitFor({ timeout: WAIT_MS });
  const before = await postedOnPage();
  for (let i = 0; i < 5; i++) await seedPendingPayout(s.paydb, accountId);
  // Evaluated in the page (a string: the test's TypeScript has no DOM types).
  await page.waitForFunction(
    `Number(document.querySelector('[data-testid=posted-count] b')?.textContent) > ${before}`,
    undefined,
    { timeout: WAIT_MS },
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

it('shows a service it cannot reach as unreachable and keeps serving', async () => {
  await s.proxy.stop();
  await page.locator('#sources [data-service=rail-proxy].down').waitFor({ timeout: WAIT_MS });
  await page.locator('#fences-note .unreachable').waitFor({ timeout: WAIT_MS });
  // the rest of the overview still comes from the services that answer
  await page.locator('[data-testid=posted-count]').waitFor({ timeout: WAIT_MS });
});
