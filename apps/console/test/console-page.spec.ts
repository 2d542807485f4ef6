import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { REPO_ROOT, spawnApp, type RunningApp } from '@dlock/testing';
import { signInOnPage } from './support';

/**
 * The page's own logic (which rows are highlighted, what the ambiguous queue
 * shows, what an action form is filled with) against one in-process stand-in
 * answering the services' read routes with fixed data. What the services do
 * is console.spec.ts's job, against the real processes.
 */
jest.setTimeout(90_000);

const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
const WAIT_MS = 30_000;
const OUTPUT_DIR = path.join(REPO_ROOT, '.tmp', 'console');
const PAYOUT = '5b0d1c52-4d7e-4f47-9d51-0d6d3c1f2a10';
const SUBMISSION = '9a3c1e1b-2f44-4b8e-8e7a-6c1d2b3a4f50';

const ROUTES: Record<string, unknown> = {
  '/v1/locks': { locks: [], truncated: false },
  '/v1/sessions': { sessions: [], truncated: false },
  '/v1/safety-events': { service: 'fake', events: [], nextAfter: 0 },
  '/v1/payouts/stats': {
    windowSeconds: 300,
    byState: {
      PENDING: 0,
      CLAIMED: 0,
      RAIL_SUBMITTED: 0,
      RAIL_ACKED: 0,
      RAIL_AMBIGUOUS: 1,
      POSTED: 3,
      FAILED: 0,
      ABANDONED: 0,
    },
    postedPerBucket: [{ at: '2026-12-01T06:00:00.000Z', count: 3 }],
    bucketSeconds: 10,
    latencyMillis: { p50: 120, p90: 450, p99: 1500, count: 3 },
  },
  '/v1/accounts': {
    accounts: [
      { accountId: 'acct-agree', currency: 'EUR', balanceMinor: 100, fence: '7' },
      { accountId: 'acct-gap', currency: 'EUR', balanceMinor: 200, fence: '12' },
    ],
    truncated: false,
  },
  '/v1/rail/high-water': {
    accounts: [
      { accountId: 'acct-agree', highWater: '7' },
      { accountId: 'acct-gap', highWater: '15' },
    ],
    truncated: false,
  },
  '/v1/payouts': {
    items: [
      {
        payoutId: PAYOUT,
        accountId: 'acct-gap',
        amountMinor: 2500,
        currency: 'EUR',
        beneficiaryRef: 'ben-1',
        state: 'RAIL_AMBIGUOUS',
        attemptCount: 1,
        createdAt: '2026-12-01T06:00:00.000Z',
      },
    ],
  },
  [`/v1/rail/submissions/${PAYOUT}`]: {
    payoutId: PAYOUT,
    submissions: [
      {
        submissionId: SUBMISSION,
        payoutId: PAYOUT,
        accountId: 'acct-gap',
        presentedToken: '15',
        ownerId: 'executor-2',
        clientRef: 'ref',
        amountMinor: 2500,
        currency: 'EUR',
        outcome: 'AMBIGUOUS',
        railReference: 'rail-77',
        errorCode: 'RAIL_TIMEOUT',
        submittedAt: '2026-12-01T06:00:01.000Z',
        resolvedAt: null,
      },
    ],
  },
};

let fake: Server;
let consoleApp: RunningApp;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  fake = createServer((req, res) => {
    const body = ROUTES[new URL(req.url ?? '/', 'http://x').pathname];
    res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        body ?? { code: 'NOT_FOUND', message: 'no such route', retrySafe: false, traceId: 'x' },
      ),
    );
  });
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  [consoleApp, browser] = await Promise.all([
    spawnApp('console', {
      LOCK_SERVER_URL: url,
      PAYMENT_RESOURCE_URL: url,
      RAIL_PROXY_URL: url,
    }),
    chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }),
  ]);
  page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  await page.goto(consoleApp.url);
  await signInOnPage(page, 'operator-alice');
});

afterAll(async () => {
  await browser?.close();
  await consoleApp?.stop();
  await new Promise((resolve) => fake?.close(resolve));
});

it('highlights an account whose fence and rail high-water differ, and only that one', async () => {
  const gap = page.locator('#fences tr[data-account=acct-gap]');
  await gap.waitFor({ timeout: WAIT_MS });
  await expect(gap.getAttribute('class')).resolves.toBe('disagree');
  await expect(gap.locator('td.mark').allTextContents()).resolves.toEqual(['12', '15']);
  await expect(
    page.locator('#fences tr[data-account=acct-agree]').getAttribute('class'),
  ).resolves.toBe('');
  await expect(page.locator('#fences-note').textContent()).resolves.toBe('2 accounts, 1 differ');
});

it("lists an ambiguous payout with the rail-proxy's record, and fills the action form from it", async () => {
  const item = page.locator(`#ambiguous [data-payout="${PAYOUT}"]`);
  await item.waitFor({ timeout: WAIT_MS });
  await expect(item.locator('.sub').textContent()).resolves.toBe(
    '9a3c1e1b token 15 by executor-2: AMBIGUOUS ref rail-77 (RAIL_TIMEOUT)',
  );
  await item.locator('button').click();
  await expect(page.locator('#payout-id').inputValue()).resolves.toBe(PAYOUT);
  await expect(page.locator('#payout-railref').inputValue()).resolves.toBe('rail-77');
});

it('shows the latency percentiles and the chart of posted per second', async () => {
  await expect(page.locator('#latency').textContent()).resolves.toBe(
    'latency p50 120 msp90 450 msp99 1.50 sof 3 posted',
  );
  // one bucket of 3 posted in 10 s: the axis tops at 1.0/s, its floor; one bar drawn
  await expect(page.locator('#chart rect').count()).resolves.toBe(1);
  await expect(page.locator('#chart text').first().textContent()).resolves.toBe('1.0/s');
  mkdirSync(OUTPUT_DIR, { recursive: true });
  await page.screenshot({ path: path.join(OUTPUT_DIR, 'page-stand-in.png') });
});
