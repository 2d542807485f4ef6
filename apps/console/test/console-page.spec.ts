import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { REPO_ROOT, spawnApp, type RunningApp } from '@dlock/testing';
import { signInOnPage, waitInPage } from './support';

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
/** Ids as long as npm start's: an account is a UUID, its lock key `payout:` and the UUID. */
const ACCOUNT_GAP = 'acct-gap-3f1c2b7e-8a4d-4c51-9e0f-6b2d1a7c9e43';
const LOCK_KEY = `payout:${ACCOUNT_GAP}`;
const SUBMISSION = '9a3c1e1b-2f44-4b8e-8e7a-6c1d2b3a4f50';
/** Accounts whose guards agree: more than the fences panel shows at 1280x800. */
const FILLERS = Array.from({ length: 40 }, (_, i) => `acct-filler-${String(i).padStart(2, '0')}`);

const ROUTES: Record<string, unknown> = {
  '/v1/locks': {
    locks: [
      {
        key: LOCK_KEY,
        ownerId: 'executor-12',
        sessionId: '0b7e4f5c-2d1a-4e9b-8c3f-7a6d5e4c3b2a',
        token: '123456789012',
        leaseRemainingMillis: 28_400,
      },
    ],
    truncated: false,
  },
  '/v1/sessions': { sessions: [], truncated: false },
  '/v1/safety-events': {
    service: 'fake',
    events: [
      { seq: 1, at: '2026-12-01T06:00:00.000Z', event: 'lock_revoked', fields: { key: LOCK_KEY } },
      { seq: 2, at: '2026-12-01T06:00:01.000Z', event: 'fenced_out', fields: { token: '15' } },
      { seq: 3, at: '2026-12-01T06:00:02.000Z', event: 'fenced_out', fields: { token: '16' } },
    ],
    nextAfter: 3,
  },
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
    latencyMillisAllTime: { p50: 95, p90: 2400, p99: 16000, count: 1200 },
  },
  '/v1/accounts': {
    accounts: [
      { accountId: 'acct-agree', currency: 'EUR', balanceMinor: 100, fence: '7' },
      { accountId: ACCOUNT_GAP, currency: 'EUR', balanceMinor: 200, fence: '12' },
      ...FILLERS.map((accountId) => ({ accountId, currency: 'EUR', balanceMinor: 1, fence: '3' })),
    ],
    truncated: false,
  },
  '/v1/rail/high-water': {
    accounts: [
      { accountId: 'acct-agree', highWater: '7' },
      { accountId: ACCOUNT_GAP, highWater: '15' },
      ...FILLERS.map((accountId) => ({ accountId, highWater: '3' })),
    ],
    truncated: false,
  },
  '/v1/payouts': {
    items: [
      {
        payoutId: PAYOUT,
        accountId: ACCOUNT_GAP,
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
        accountId: ACCOUNT_GAP,
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
        railReceipt: null,
      },
    ],
  },
};

let fake: Server;
let consoleApp: RunningApp;
let browser: Browser;
let page: Page;
/** Every answer of 400 or more the page got while it loaded (a missing favicon was one). */
const failed: string[] = [];

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
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on('response', (r) => {
    if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`);
  });
  await page.goto(consoleApp.url);
  await signInOnPage(page, 'operator-alice');
});

afterAll(async () => {
  await browser?.close();
  await consoleApp?.stop();
  await new Promise((resolve) => fake?.close(resolve));
});

it('highlights an account whose fence and rail high-water differ, and only that one', async () => {
  const gap = page.locator(`#fences tr[data-account="${ACCOUNT_GAP}"]`);
  await gap.waitFor({ timeout: WAIT_MS });
  await expect(gap.getAttribute('class')).resolves.toBe('disagree');
  await expect(gap.locator('td.mark').allTextContents()).resolves.toEqual(['12', '15']);
  await expect(
    page.locator('#fences tr[data-account=acct-agree]').getAttribute('class'),
  ).resolves.toBe('');
  // More rows than the panel shows: its title says how many lie below, until they are in view.
  const note = page.locator('#fences-note');
  await expect(note.textContent()).resolves.toMatch(
    /^42 accounts, 1 differ · \d+ more below, scroll ↓$/,
  );
  await page.locator('#fences').evaluate((t) => {
    const box = t.closest('.scroll')!;
    box.scrollTop = box.scrollHeight;
  });
  await waitInPage(
    page,
    `document.querySelector('#fences-note').textContent === '42 accounts, 1 differ'`,
    WAIT_MS,
  );
});

it("lists an ambiguous payout with the rail-proxy's record, and fills the action form from it", async () => {
  const item = page.locator(`#ambiguous [data-payout="${PAYOUT}"]`);
  await item.waitFor({ timeout: WAIT_MS });
  await expect(item.locator('.sub').textContent()).resolves.toBe(
    '9a3c1e1b token 15 by executor-2: AMBIGUOUS ref rail-77 (RAIL_TIMEOUT)',
  );
  await expect(item.locator('button').textContent()).resolves.toBe('resolve / abandon…');
  await item.locator('button').click();
  await expect(page.locator('#payout-id').inputValue()).resolves.toBe(PAYOUT);
  await expect(page.locator('#payout-railref').inputValue()).resolves.toBe('rail-77');
});

it('shows the latency of the last minutes next to all time, and the chart of posted per second', async () => {
  await page.locator('[data-testid=latency-all]').waitFor({ timeout: WAIT_MS });
  await expect(page.locator('[data-testid=latency-window]').textContent()).resolves.toBe(
    'last 5 minp50 120 msp90 450 msp99 1.50 s3 posted',
  );
  await expect(page.locator('[data-testid=latency-all]').textContent()).resolves.toBe(
    'all timep50 95 msp90 2.40 sp99 16.00 s1200 posted',
  );
  // one bucket of 3 posted in 10 s: the axis tops at 1.0/s, its floor; one bar drawn
  await expect(page.locator('#chart rect').count()).resolves.toBe(1);
  await expect(page.locator('#chart text').first().textContent()).resolves.toBe('1.0/s');
  mkdirSync(OUTPUT_DIR, { recursive: true });
  await page.screenshot({ path: path.join(OUTPUT_DIR, 'page-stand-in.png') });
});

/** Where `inner` ends past the visible box of its scrolling panel part: `[]` when it fits. */
async function cutOff(inner: string): Promise<string[]> {
  return page.locator(inner).evaluateAll((nodes) =>
    nodes.flatMap((node) => {
      const box = node.getBoundingClientRect();
      const clip = (node.closest('.scroll') ?? node.closest('.panel'))!.getBoundingClientRect();
      const inside = box.left >= clip.left - 0.5 && box.right <= clip.right + 0.5;
      return inside && box.width > 0 ? [] : [`${node.textContent} ${box.left}..${box.right}`];
    }),
  );
}

it('at a laptop width (1280x800) every panel fits: time left, revoke, high-water in sight, nothing scrolls sideways', async () => {
  const lock = page.locator(`#locks tr[data-key="${LOCK_KEY}"]`);
  await lock.waitFor({ timeout: WAIT_MS });
  await expect(cutOff('#locks tbody td')).resolves.toEqual([]);
  await expect(cutOff('#fences tbody td')).resolves.toEqual([]);
  await expect(lock.locator('td').nth(2).textContent()).resolves.toMatch(/^\d+(\.\d)? s$/);
  // The cut key keeps its whole text for a hover.
  await expect(lock.locator('td').first().getAttribute('title')).resolves.toBe(LOCK_KEY);
  const sideways = await page
    .locator('.panel, .scroll')
    .evaluateAll((nodes) =>
      nodes.filter((n) => n.scrollWidth > n.clientWidth + 1).map((n) => n.id || n.className),
    );
  expect(sideways).toEqual([]);
  await lock.locator('button').click();
  await expect(page.locator('#revoke-key').inputValue()).resolves.toBe(LOCK_KEY);
  await expect(page.locator('#revoke-token').inputValue()).resolves.toBe('123456789012');
  // The key input shows the whole key, not its first half.
  await expect(
    page.locator('#revoke-key').evaluate((i) => i.scrollWidth <= i.clientWidth),
  ).resolves.toBe(true);
  await page.screenshot({ path: path.join(OUTPUT_DIR, 'page-1280.png') });
});

it('filters the safety feed by event kind, and shows every kind again', async () => {
  const feed = page.locator('#feed li:visible');
  await page.locator('#feed li[data-event=lock_revoked]').first().waitFor({ timeout: WAIT_MS });
  await expect(
    page.locator('#feed-kind option').evaluateAll((os) => os.map((o) => o.textContent)),
  ).resolves.toEqual(['all', 'fenced_out', 'lock_revoked']);
  const all = await feed.count();
  await page.locator('#feed-kind').selectOption('fenced_out');
  const kinds = await feed.evaluateAll((lis) => lis.map((li) => li.getAttribute('data-event')));
  expect(kinds.length).toBeGreaterThan(0);
  expect(new Set(kinds)).toEqual(new Set(['fenced_out']));
  await page.locator('#feed-kind').selectOption('');
  // Every entry shows again (the feed keeps growing while the page polls, so count them at once).
  const hidden = await page
    .locator('#feed li')
    .evaluateAll(
      (lis) =>
        lis.filter((li) => (li as unknown as { offsetParent: unknown }).offsetParent === null)
          .length,
    );
  expect(hidden).toBe(0);
  await expect(feed.count()).resolves.toBeGreaterThanOrEqual(all);
});

it('writes times on a 24-hour clock in UTC, and the page loads without a missing file', async () => {
  await page.locator('#feed li[data-event=lock_revoked]').first().waitFor({ timeout: WAIT_MS });
  await expect(
    page.locator('#feed li[data-event=lock_revoked]').first().textContent(),
  ).resolves.toMatch(/^06:00:00 lock_revoked/);
  await expect(page.locator('#updated').textContent()).resolves.toMatch(
    /^updated \d\d:\d\d:\d\d UTC$/,
  );
  await expect(page.locator('#chart text').last().textContent()).resolves.toBe('06:00:00 UTC');
  expect(failed).toEqual([]);
});
