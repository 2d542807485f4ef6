import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request, type ClientRequest, type IncomingHttpHeaders } from 'node:http';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { LockClient, type LockHandle, type LockSession } from '@dlock/lock-client';
import {
  DEV_POLICY_PATH,
  REPO_ROOT,
  migratedDatabase,
  refusingPort,
  scratchDir,
  spawnApp,
  testTokenProvider,
  type RunningApp,
} from '@dlock/testing';
import { personToken, signInOnPage, waitInPage } from './support';

/**
 * Who may use the console, and how much of it one identity can take
 * (docs/console.md, "Signing in" and "What a person sees"): the real console
 * in front of a real lock-server, under the development policy plus two roles
 * of the test's own. Each attack is refused with nothing started for the
 * attacker, and the honest operator's path still works beside it.
 */
jest.setTimeout(120_000);

const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
const WAIT_MS = 30_000;
const OUTPUT_DIR = path.join(REPO_ROOT, '.tmp', 'console');
const SESSIONS_PER_SUBJECT_MAX = 2;
const STREAMS_PER_SUBJECT_MAX = 2;
/** Sessions and locks of one noisy executor: more than a 50-row panel held. */
const NOISY_SESSIONS = 200;
const NOISY_LOCKS = 60;
const HONEST_KEY = 'payout:zz-honest';

let lockServer: RunningApp;
let consoleApp: RunningApp;
let browser: Browser;
const opened: LockSession[] = [];
let honest: LockHandle;

/**
 * The development policy, and: `viewer-*` reads what the page shows but not
 * grants (no `locks.read-grants`); `feeder` has a role that reads nothing the
 * page shows. `mallory` is in no entry at all.
 */
function policyFile(): string {
  const dev = readFileSync(DEV_POLICY_PATH, 'utf8');
  const roles =
    '  viewer:\n    operations: [locks.list, sessions.list, payouts.stats, payouts.list,' +
    ' accounts.list, high-water.list, rail.read, safety-events.read]\n';
  const policy =
    dev.replace(/^identities:$/m, `${roles}\nidentities:`) +
    "  - subject: 'viewer-*'\n    roles: [viewer]\n  - subject: feeder\n    roles: [feed]\n";
  const file = path.join(scratchDir('dlock-console-access-'), 'policy.yaml');
  writeFileSync(file, policy);
  return file;
}

function lockClient(ownerId: string): LockClient {
  return new LockClient({
    baseUrl: lockServer.url,
    ownerId,
    token: testTokenProvider(ownerId),
    sessionTtlMs: 60_000,
    lockTtlMs: 60_000,
  });
}

beforeAll(async () => {
  const policy = policyFile();
  const lockdb = await migratedDatabase('lockdb');
  const nowhere = `http://127.0.0.1:${await refusingPort()}`;
  lockServer = await spawnApp('lock-server', {
    LOCK_BACKEND: 'pg',
    LOCKDB_URL: lockdb,
    AUTH_POLICY: policy,
    // The noisy executor below opens 200 sessions: above the lock-server's own per-owner cap
    // (docs/lock-server.md, "Limits"), which this test is not about.
    LOCK_SESSIONS_PER_OWNER_MAX: '250',
  });
  [consoleApp, browser] = await Promise.all([
    spawnApp('console', {
      AUTH_POLICY: policy,
      LOCK_SERVER_URL: lockServer.url,
      PAYMENT_RESOURCE_URL: nowhere,
      RAIL_PROXY_URL: nowhere,
      CONSOLE_EVENT_POLL_MS: '300',
      // Room for everyone these tests sign in, not for ten sign-ins of one person on top.
      CONSOLE_SESSIONS_MAX: '16',
      CONSOLE_SESSIONS_PER_SUBJECT_MAX: String(SESSIONS_PER_SUBJECT_MAX),
      CONSOLE_SSE_CLIENTS_MAX: '6',
      CONSOLE_SSE_CLIENTS_PER_SUBJECT_MAX: String(STREAMS_PER_SUBJECT_MAX),
    }),
    chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }),
  ]);
  const session = await lockClient('executor-1').openSession();
  opened.push(session);
  honest = await session.acquire(HONEST_KEY);
});

afterAll(async () => {
  await browser?.close();
  await Promise.all(opened.map((s) => s.close().catch(() => undefined)));
  await Promise.all([consoleApp?.stop(), lockServer?.stop()]);
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: any;
}

/** One request to the console as its own page would send it (its Host and Origin). */
function call(
  method: string,
  p: string,
  cookie?: string,
  body?: unknown,
  extra: Record<string, string> = {},
): Promise<Answer> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = {
    host: `127.0.0.1:${consoleApp.port}`,
    ...extra,
    ...(cookie === undefined ? {} : { cookie }),
    ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
  };
  return new Promise((resolve, reject) => {
    const req = request(`${consoleApp.url}${p}`, { method, headers }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('latin1')));
      res.on('end', () => {
        const json = res.headers['content-type']?.startsWith('application/json');
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: json ? JSON.parse(text) : text,
        });
      });
    });
    req.on('error', reject);
    req.end(payload);
  });
}

async function signIn(subject: string): Promise<Answer & { cookie: string }> {
  const res = await call('POST', '/api/session', undefined, { token: await personToken(subject) });
  return { ...res, cookie: String(res.headers['set-cookie']?.[0] ?? '').split(';')[0] };
}

/** Opens the event stream; the status, and a way to close it again. */
function openStream(cookie: string): Promise<{ status: number; body: string; req: ClientRequest }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${consoleApp.url}/api/events`,
      { headers: { host: `127.0.0.1:${consoleApp.port}`, cookie } },
      (res) => {
        if (res.statusCode === 200) return resolve({ status: 200, body: '', req });
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, req }));
      },
    );
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
    req.end();
  });
}

describe('signing in needs a role in the policy', () => {
  it('refuses a valid token of a subject the policy gives no role: 403, no session, nothing read', async () => {
    const mallory = await signIn('mallory');
    expect(mallory.status).toBe(403);
    expect(mallory.body).toMatchObject({ code: 'FORBIDDEN', details: { reason: 'policy' } });
    expect(mallory.headers['set-cookie']).toBeUndefined();
    expect((await call('GET', '/api/overview')).status).toBe(401);
    expect(consoleApp.output()).toContain('"subject":"mallory"');
    // The honest operator beside it.
    const alice = await signIn('operator-alice');
    expect([alice.status, alice.body.subject]).toEqual([200, 'operator-alice']);
  });

  it('shows a person with a role only the panels their roles grant, and no stream they may not read', async () => {
    const feeder = await signIn('feeder');
    expect(feeder.status).toBe(200);
    const overview = (await call('GET', '/api/overview', feeder.cookie)).body;
    for (const [part, operation] of [
      ['stats', 'payouts.stats'],
      ['locks', 'locks.list'],
      ['sessions', 'sessions.list'],
      ['fences', 'accounts.list'],
      ['ambiguous', 'payouts.list'],
    ])
      expect([part, overview[part]]).toEqual([
        part,
        {
          ok: false,
          service: 'console',
          error: `FORBIDDEN: your roles do not grant ${operation}`,
          denied: operation,
        },
      ]);
    expect(JSON.stringify(overview)).not.toContain(HONEST_KEY);
    const stream = await openStream(feeder.cookie);
    expect([stream.status, JSON.parse(stream.body).details]).toEqual([403, { reason: 'policy' }]);
  });
});

describe('tokens and session ids only for locks.read-grants', () => {
  it("hides a grant's token and session id from a viewer, and shows them to an operator", async () => {
    const token = honest.fencingToken.toString();
    const sessionId = opened[0].sessionId;
    const viewer = await signIn('viewer-vic');
    const seen = (await call('GET', '/api/overview', viewer.cookie)).body;
    expect(seen.locks.data.grantsShown).toBe(false);
    const row = seen.locks.data.owners
      .find((g: { ownerId: string }) => g.ownerId === 'executor-1')
      .rows.find((r: { key: string }) => r.key === HONEST_KEY);
    expect(row).toEqual({
      key: HONEST_KEY,
      ownerId: 'executor-1',
      leaseRemainingMillis: expect.any(Number),
    });
    for (const secret of [sessionId, `"token":"${token}"`])
      expect(JSON.stringify(seen)).not.toContain(secret);

    const operator = await signIn('operator-olga');
    const full = (await call('GET', '/api/overview', operator.cookie)).body;
    expect(full.locks.data.grantsShown).toBe(true);
    expect(JSON.stringify(full.locks)).toContain(`"token":"${token}"`);
    expect(JSON.stringify(full.sessions)).toContain(sessionId);
  });
});

/** The stream's text from its start until it holds `text` (or the deadline passes). */
function streamUntil(cookie: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no ${text} in the stream within ${WAIT_MS} ms: ${seen}`));
    }, WAIT_MS);
    const req = request(
      `${consoleApp.url}/api/events`,
      { headers: { host: `127.0.0.1:${consoleApp.port}`, cookie } },
      (res) =>
        res.on('data', (c: Buffer) => {
          seen += c.toString();
          if (!seen.includes(text)) return;
          clearTimeout(timer);
          req.destroy();
          resolve(seen);
        }),
    );
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
    req.end();
  });
}

describe('the safety feed without locks.read-grants', () => {
  it("carries a revoke's event without the revoked token to a viewer, with it to an operator", async () => {
    const key = 'payout:revoke-me';
    const session = await lockClient('executor-2').openSession();
    opened.push(session);
    const handle = await session.acquire(key);
    const olga = await signIn('operator-olga');
    const revoked = await call(
      'POST',
      '/api/actions/revoke',
      olga.cookie,
      {
        key,
        reason: 'holder stuck on a dead worker',
      },
      { 'x-csrf-token': olga.body.csrfToken as string },
    );
    expect(revoked.status).toBe(200);
    const token = handle.fencingToken.toString();
    expect(revoked.body.revokedToken).toBe(token);
    const event = (stream: string) =>
      stream
        .split('\n')
        .filter((l) => l.startsWith('data: ') && l.includes(key))
        .map((l) => JSON.parse(l.slice('data: '.length)))
        .find((e) => e.event === 'lock_revoked');
    const viewer = event(await streamUntil((await signIn('viewer-vic')).cookie, key));
    expect(viewer.fields).toMatchObject({ key, operator: 'operator-olga' });
    expect(viewer.fields).not.toHaveProperty('revokedToken');
    const operator = event(await streamUntil(olga.cookie, key));
    expect(operator.fields).toMatchObject({ key, revokedToken: token });
  });
});

describe('one identity cannot take every place', () => {
  it("a person's sign-ins beyond their share end their own oldest sessions; others still sign in", async () => {
    const eve: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await signIn('viewer-eve');
      expect(res.status).toBe(200);
      eve.push(res.cookie);
    }
    const live = [];
    for (const cookie of eve) live.push((await call('GET', '/api/overview', cookie)).status);
    expect(live).toEqual([...Array(10 - SESSIONS_PER_SUBJECT_MAX).fill(401), 200, 200]);
    // Eve holds two places whatever she does; other people still get in.
    for (const subject of ['operator-bob', 'operator-carol']) {
      const res = await signIn(subject);
      expect([subject, res.status]).toEqual([subject, 200]);
      expect((await call('GET', '/api/overview', res.cookie)).status).toBe(200);
    }
  });

  it('refuses a person a stream beyond their share (503) while another person still gets one', async () => {
    const [eve, dan] = [await signIn('viewer-eve2'), await signIn('operator-dan')];
    const streams = [];
    try {
      for (let i = 0; i < STREAMS_PER_SUBJECT_MAX; i++) {
        streams.push(await openStream(eve.cookie));
        expect(streams.at(-1)!.status).toBe(200);
      }
      const more = await openStream(eve.cookie);
      expect(more.status).toBe(503);
      expect(JSON.parse(more.body)).toMatchObject({
        code: 'UNAVAILABLE',
        details: { reason: 'streams-per-subject' },
      });
      streams.push(await openStream(dan.cookie));
      expect(streams.at(-1)!.status).toBe(200);
    } finally {
      for (const s of streams) s.req.destroy();
    }
  });
});

describe('the panels group by owner: one noisy executor cannot hide the others', () => {
  let page: Page;

  beforeAll(async () => {
    const noisy = lockClient('executor-noisy');
    // Twenty at a time: a burst, as a misbehaving executor would open them.
    for (let i = 0; i < NOISY_SESSIONS; i += 20)
      opened.push(...(await Promise.all(Array.from({ length: 20 }, () => noisy.openSession()))));
    const first = opened[opened.length - NOISY_SESSIONS];
    for (let i = 0; i < NOISY_LOCKS; i++)
      await first.acquire(`payout:aa-noisy-${String(i).padStart(2, '0')}`);
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(consoleApp.url);
    await signInOnPage(page, 'operator-alice');
  });

  it("shows every owner's line with its counts, and the honest executor's lock and session", async () => {
    const owner = (table: string, who: string) =>
      page.locator(`#${table} tr.owner[data-owner="${who}"]`);
    await owner('locks', 'executor-noisy').waitFor({ timeout: WAIT_MS });
    await expect(owner('locks', 'executor-noisy').textContent()).resolves.toBe(
      `executor-noisy · ${NOISY_LOCKS} locks (${NOISY_LOCKS - 3} more)show all ${NOISY_LOCKS}`,
    );
    await expect(owner('locks', 'executor-1').textContent()).resolves.toBe('executor-1 · 1 lock');
    await expect(page.locator(`#locks tr[data-key="${HONEST_KEY}"]`).isVisible()).resolves.toBe(
      true,
    );
    const noisyRows = page.locator('#locks tr[data-owner="executor-noisy"]:not(.owner)');
    await expect(noisyRows.count()).resolves.toBe(3);
    await expect(owner('sessions', 'executor-noisy').textContent()).resolves.toBe(
      `executor-noisy · ${NOISY_SESSIONS} sessions, ${NOISY_LOCKS} locks ` +
        `(${NOISY_SESSIONS - 3} more)show all ${NOISY_SESSIONS}`,
    );
    await expect(owner('sessions', 'executor-1').textContent()).resolves.toBe(
      'executor-1 · 1 session, 1 lock',
    );
    // The session holding the noisy locks comes first in its owner's rows, with its state.
    const noisyRow = page.locator('#sessions tr[data-owner="executor-noisy"]:not(.owner)').first();
    await expect(noisyRow.locator('td:nth-child(2)').textContent()).resolves.toBe('ACTIVE');
    await expect(noisyRow.locator('td:nth-child(3)').textContent()).resolves.toBe(
      String(NOISY_LOCKS),
    );
    await expect(page.locator('#locks-note').textContent()).resolves.toBe(
      `${NOISY_LOCKS + 1} now, 2 owners`,
    );
    mkdirSync(OUTPUT_DIR, { recursive: true });
    await page.screenshot({ path: path.join(OUTPUT_DIR, 'owners.png') });
    await owner('locks', 'executor-noisy').locator('button').click();
    await waitInPage(
      page,
      `document.querySelectorAll('#locks tr[data-owner="executor-noisy"]:not(.owner)').length === ${NOISY_LOCKS}`,
      WAIT_MS,
    );
  });
});

describe("the page's headers", () => {
  it('sends a strict CSP, no framing, nosniff and no referrer, on the page and on a refusal', async () => {
    const page = await call('GET', '/');
    const refusal = await call('GET', '/api/overview');
    for (const res of [page, refusal]) {
      expect(res.headers['content-security-policy']).toBe(
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
          "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
      );
      expect(res.headers).toMatchObject({
        'x-frame-options': 'DENY',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
      });
    }
    // The page loads nothing inline: its only script and stylesheet are files of its own.
    expect(page.body).not.toMatch(/<script>|<style|style=/);
    const icon = await call('GET', '/favicon.ico');
    expect([icon.status, icon.headers['content-type']]).toEqual([200, 'image/vnd.microsoft.icon']);
  });

  it('runs the page under that policy with no violation', async () => {
    const page = await browser.newPage();
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/.test(m.text())) violations.push(m.text());
    });
    await page.goto(consoleApp.url);
    await signInOnPage(page, 'operator-alice');
    await page.locator('#locks tr.owner').first().waitFor({ timeout: WAIT_MS });
    expect(violations).toEqual([]);
    await page.close();
  });
});
