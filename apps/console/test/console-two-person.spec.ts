import { readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { LockClient, type LockHandle, type LockSession } from '@dlock/lock-client';
import {
  DEV_POLICY_PATH,
  refusingPort,
  http,
  migratedDatabase,
  spawnApp,
  testTokenProvider,
  waitFor,
  withClient,
  type RunningApp,
} from '@dlock/testing';
import { signInOnPage } from './support';

/**
 * Two people at two browsers (docs/console.md, "Two-person revoke"): the
 * development policy with `revoke.approvals: 2`, a real lock-server and the
 * real console acting for whoever is signed in. Alice asks for a revoke, Bob
 * approves it, and the lock-server's records name both; a page of another
 * origin and a rebound host name get nothing done.
 */
jest.setTimeout(120_000);

const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
const WAIT_MS = 30_000;
/** Chromium resolves this name to 127.0.0.1, as a DNS-rebinding attacker's would. */
const REBOUND = 'rebound.test';
const dir = mkdtempSync(path.join(tmpdir(), 'dlock-console-two-person-'));

let lockdb: string;
let lockServer: RunningApp;
let consoleApp: RunningApp;
let evil: Server;
let evilUrl: string;
let browser: Browser;
const contexts: BrowserContext[] = [];
const held: { session: LockSession; handle: LockHandle }[] = [];

beforeAll(async () => {
  // The development roles as shipped (console, operator-*, executor-*), two people per revoke.
  const policy = path.join(dir, 'two-person-policy.yaml');
  const dev = readFileSync(DEV_POLICY_PATH, 'utf8');
  const twoPerson = dev.replace(/^ {2}approvals: 1$/m, '  approvals: 2');
  expect(twoPerson).not.toBe(dev);
  writeFileSync(policy, twoPerson);
  lockdb = await migratedDatabase('lockdb');
  const nowhere = `http://127.0.0.1:${await refusingPort()}`;
  lockServer = await spawnApp('lock-server', {
    LOCK_BACKEND: 'pg',
    LOCKDB_URL: lockdb,
    AUTH_POLICY: policy,
  });
  evil = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>elsewhere</title>');
  });
  await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve));
  evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`;
  [consoleApp, browser] = await Promise.all([
    spawnApp('console', {
      LOCK_SERVER_URL: lockServer.url,
      PAYMENT_RESOURCE_URL: nowhere,
      RAIL_PROXY_URL: nowhere,
      CONSOLE_EVENT_POLL_MS: '300',
    }),
    chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', `--host-resolver-rules=MAP ${REBOUND} 127.0.0.1`],
    }),
  ]);
});

afterAll(async () => {
  for (const h of held) await h.session.close().catch(() => undefined);
  await browser?.close();
  await Promise.all([consoleApp?.stop(), lockServer?.stop()]);
  await new Promise((resolve) => evil?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** A payout lock held by an executor, as under npm start. */
async function holdLock(key: string): Promise<LockHandle> {
  const client = new LockClient({
    baseUrl: lockServer.url,
    ownerId: 'executor-1',
    token: testTokenProvider('executor-1'),
    sessionTtlMs: 60_000,
    lockTtlMs: 60_000,
  });
  const session = await client.openSession();
  const handle = await session.acquire(key);
  held.push({ session, handle });
  return handle;
}

async function personAt(subject: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1366, height: 768 } });
  contexts.push(context);
  const page = await context.newPage();
  await page.goto(consoleApp.url);
  await signInOnPage(page, subject);
  return page;
}

/** The lock-server's view, asked as an operator of the development policy. */
async function lockOnServer(key: string): Promise<{ held: boolean; fencingToken?: string }> {
  const res = await http('GET', `${lockServer.url}/v1/locks/${encodeURIComponent(key)}`);
  expect(res.status).toBe(200);
  return res.body as { held: boolean; fencingToken?: string };
}

it('a revoke requested by one operator takes effect when a different one approves it', async () => {
  const key = 'payout:acct-two-person';
  const handle = await holdLock(key);
  const token = handle.fencingToken.toString();
  const [alice, bob] = [await personAt('operator-alice'), await personAt('operator-bob')];

  // Alice asks: the lock-server files a request, and the holder keeps its lock.
  await alice.locator(`#locks tr[data-key="${key}"] button`).click({ timeout: WAIT_MS });
  await alice.locator('#revoke-reason').fill('holder stuck on a dead worker');
  await alice.locator('#revoke-submit').click();
  const asked = alice.locator('#action-result.ok [data-testid=result-text]');
  await asked.waitFor({ timeout: WAIT_MS });
  await expect(asked.textContent()).resolves.toMatch(
    new RegExp(`^revoke of ${key} requested by operator-alice: waiting for a second operator`),
  );
  await expect(lockOnServer(key)).resolves.toMatchObject({ held: true, fencingToken: token });
  // Her own request is not hers to approve.
  const hers = alice.locator(`#requests li[data-key="${key}"] button`);
  await hers.waitFor({ timeout: WAIT_MS });
  await expect(hers.isDisabled()).resolves.toBe(true);

  // Bob sees it on his page and approves: the revoke happens now.
  const request = bob.locator(`#requests li[data-key="${key}"]`);
  await request.waitFor({ timeout: WAIT_MS });
  await expect(request.textContent()).resolves.toContain('by operator-alice');
  await request.locator('button').click();
  const done = bob.locator('#action-result.ok [data-testid=result-text]');
  await done.waitFor({ timeout: WAIT_MS });
  const text = (await done.textContent()) ?? '';
  expect(text).toMatch(
    new RegExp(
      `^revoked ${key}: token ${token} revoked, new token floor \\d+; ` +
        'requested by operator-alice, approved by operator-bob$',
    ),
  );
  await expect(lockOnServer(key)).resolves.toMatchObject({ held: false });
  await request.waitFor({ state: 'detached', timeout: WAIT_MS });

  // The records name both people, each as themselves (not the console).
  const rows = await withClient(lockdb, async (c) => ({
    request: (
      await c.query(
        'SELECT operator, requested_by, approved_by FROM lock_revocation_request WHERE lock_key = $1',
        [key],
      )
    ).rows,
    revocation: (
      await c.query(
        'SELECT operator, revoked_token::text FROM lock_revocation WHERE lock_key = $1',
        [key],
      )
    ).rows,
  }));
  expect(rows).toEqual({
    request: [
      { operator: 'operator-alice', requested_by: 'operator-alice', approved_by: 'operator-bob' },
    ],
    revocation: [{ operator: 'operator-alice', revoked_token: token }],
  });
  await bob
    .locator('#feed li[data-event=lock_revoked][data-service=lock-server]')
    .filter({ hasText: key })
    .filter({ hasText: 'requestedBy=operator-alice' })
    .filter({ hasText: 'approvedBy=operator-bob' })
    .first()
    .waitFor({ timeout: WAIT_MS });
});

it('refuses an action posted from a page of another origin, and a rebound host name', async () => {
  const key = 'payout:acct-cross-origin';
  const handle = await holdLock(key);
  const alice = await personAt('operator-alice');
  // Another site open in Alice's browser (same browser context: her cookie is there).
  const other = await alice.context().newPage();
  await other.goto(evilUrl);
  const refused = other.waitForResponse((r) => r.url() === `${consoleApp.url}/api/actions/revoke`);
  await other.evaluate(
    `fetch(${JSON.stringify(`${consoleApp.url}/api/actions/revoke`)}, {
      method: 'POST', mode: 'no-cors', credentials: 'include',
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify({ key: ${JSON.stringify(key)}, reason: 'cross-site forgery' }),
    }).catch(() => undefined)`,
  );
  const answer = await refused;
  expect(answer.status()).toBe(403);
  // Refused for its origin (the page cannot read why; the console's log says), before the
  // session or its anti-CSRF token were even looked at.
  await waitFor(
    () =>
      Promise.resolve(
        consoleApp
          .output()
          .split('\n')
          .some((l) => l.includes('"reason":"cross-origin request refused"')),
      ),
    WAIT_MS,
    'the refusal in the console log',
  );
  await expect(lockOnServer(key)).resolves.toMatchObject({
    held: true,
    fencingToken: handle.fencingToken.toString(),
  });
  await expect(alice.locator(`#requests li[data-key="${key}"]`).count()).resolves.toBe(0);

  // The same port under a name that resolves to 127.0.0.1: not the console's Host.
  const rebound = await other.goto(`http://${REBOUND}:${consoleApp.port}/api/session`);
  expect(rebound?.status()).toBe(403);
  await expect(rebound?.json()).resolves.toMatchObject({
    code: 'FORBIDDEN',
    details: { reason: 'host' },
  });
});
