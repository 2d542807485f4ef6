import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT, runNode, spawnApp, testIssuer, type RunningApp } from '@dlock/testing';

/**
 * Who is at the keyboard (docs/console.md, "Signing in"): the real console
 * process, signed in with a token from `npm run identity:token`, in front of
 * one in-process stand-in for the services that records what the console
 * sends. Refusals (no session, no or wrong anti-CSRF token, a foreign Host or
 * Origin) happen before the console calls anyone.
 */
jest.setTimeout(90_000);

const TOKEN_SCRIPT = path.join(REPO_ROOT, 'dist', 'scripts', 'identity-token.js');
const READS: Record<string, unknown> = {
  '/v1/locks': { locks: [], truncated: false },
  '/v1/sessions': { sessions: [], truncated: false },
  '/v1/safety-events': { service: 'fake', events: [], nextAfter: 0 },
  '/v1/accounts': { accounts: [], truncated: false },
  '/v1/rail/high-water': { accounts: [], truncated: false },
  '/v1/payouts': { items: [] },
};
const REVOKED = {
  revokedToken: '7',
  newTokenFloor: '8',
  revocationId: '5b0d1c52-4d7e-4f47-9d51-0d6d3c1f2a10',
};

interface Seen {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}
const seen: Seen[] = [];
let fake: Server;
let consoleApp: RunningApp;
let origin: string;
let fakeUrl: string;

beforeAll(async () => {
  fake = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const p = new URL(req.url ?? '/', 'http://x').pathname;
      seen.push({ method: req.method ?? '', path: p, headers: req.headers, body });
      const answer = req.method === 'POST' ? REVOKED : READS[p];
      res.writeHead(answer === undefined ? 404 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer ?? { code: 'NOT_FOUND', message: 'no', retrySafe: false }));
    });
  });
  await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
  fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  consoleApp = await spawnApp('console', {
    LOCK_SERVER_URL: fakeUrl,
    PAYMENT_RESOURCE_URL: fakeUrl,
    RAIL_PROXY_URL: fakeUrl,
    CONSOLE_EVENT_POLL_MS: '60000',
  });
  origin = `http://127.0.0.1:${consoleApp.port}`;
});

afterAll(async () => {
  await consoleApp?.stop();
  await new Promise((resolve) => fake?.close(resolve));
});

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: any;
}

function parsed(text: string, type: string | undefined): unknown {
  return type?.startsWith('application/json') ? JSON.parse(text) : text;
}

/** One request to the console with exactly these headers (Host included; fetch would not let us). */
function call(
  method: string,
  p: string,
  opts: { headers?: Record<string, string>; body?: unknown; app?: RunningApp } = {},
): Promise<Answer> {
  const app = opts.app ?? consoleApp;
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  const headers: Record<string, string> = {
    host: `127.0.0.1:${app.port}`,
    ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
    ...opts.headers,
  };
  return new Promise((resolve, reject) => {
    const req = request(`${app.url}${p}`, { method, headers }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: parsed(text, res.headers['content-type']),
        }),
      );
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** `npm run identity:token`, against the tests' issuer instead of .dlock/identity. */
async function personToken(subject: string, ...args: string[]): Promise<string> {
  const dir = (await testIssuer()).dir;
  const run = await runNode(TOKEN_SCRIPT, ['--subject', subject, '--dir', dir, ...args], {});
  expect(run.code).toBe(0);
  // runNode joins stdout (the token) and stderr (what it is).
  const [token, ...more] = run.out.split('\n').filter((l) => /^[\w-]+\.[\w-]+\.[\w-]+$/.test(l));
  expect(more).toEqual([]);
  return token;
}

interface SignedIn {
  cookie: string;
  csrf: string;
  token: string;
}

async function signIn(subject: string, headers: Record<string, string> = {}): Promise<SignedIn> {
  const token = await personToken(subject);
  const res = await call('POST', '/api/session', { body: { token }, headers });
  expect(res.status).toBe(200);
  const cookie = String(res.headers['set-cookie']?.[0] ?? '').split(';')[0];
  return { cookie, csrf: res.body.csrfToken as string, token };
}

const revokeBody = { key: 'payout:a', reason: 'holder is stuck', expectedToken: '7' };
const revokes = () => seen.filter((s) => s.method === 'POST').length;

describe('signing in', () => {
  it('starts a server-side session from a token of npm run identity:token', async () => {
    const token = await personToken('operator-alice');
    const res = await call('POST', '/api/session', { body: { token } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      signedIn: true,
      subject: 'operator-alice',
      expiresAt: expect.any(String),
      csrfToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      via: 'console',
    });
    const [cookie] = res.headers['set-cookie'] ?? [];
    expect(cookie).toMatch(/^dlock_console_session=[A-Za-z0-9_-]{43}; Max-Age=\d+; Path=\//);
    expect(cookie).toContain('; HttpOnly');
    expect(cookie).toContain('; SameSite=Strict');
    expect(cookie).not.toContain('Secure');
    // The token stays on the server: neither the cookie nor the answer carries it.
    expect(JSON.stringify(res)).not.toContain(token);
    const again = await call('GET', '/api/session', {
      headers: { cookie: cookie.split(';')[0] },
    });
    expect(again.body).toMatchObject({ signedIn: true, subject: 'operator-alice' });
    expect(again.body.csrfToken).toBe(res.body.csrfToken);
  });

  it('marks the cookie Secure when the proxy in front served https', async () => {
    const token = await personToken('operator-alice');
    const res = await call('POST', '/api/session', {
      body: { token },
      headers: { 'x-forwarded-proto': 'https' },
    });
    expect(res.headers['set-cookie']?.[0]).toContain('; Secure');
  });

  it.each([
    ['a token for a service (audience lock-server)', ['--audience', 'lock-server'], 401],
    ['no token', null, 400],
  ])('refuses %s and starts no session', async (_what, args, status) => {
    const body = args === null ? {} : { token: await personToken('operator-alice', ...args) };
    const res = await call('POST', '/api/session', { body });
    expect(res.status).toBe(status);
    expect(res.body.code).toBe(status === 401 ? 'UNAUTHENTICATED' : 'VALIDATION_FAILED');
    expect(res.headers['set-cookie']).toBeUndefined();
  });

  it('refuses an expired token and one that is no JWT', async () => {
    const expired = await (await testIssuer()).mint('operator-alice', 'console', { nowSec: 1_000 });
    for (const token of [expired, 'not-a-token']) {
      const res = await call('POST', '/api/session', { body: { token } });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ code: 'UNAUTHENTICATED', retrySafe: true });
    }
  });

  it('takes the token of `npm run identity:token -- --out FILE` as written, no -s needed', async () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'identity-token-'));
    try {
      const file = path.join(tmp, 'bob.jwt');
      const npm = (...more: string[]) =>
        promisify(execFile)(
          'npm',
          ['run', 'identity:token', '--', '--subject', 'operator-bob', ...more],
          { cwd: REPO_ROOT, env: { ...process.env, npm_config_loglevel: '' }, timeout: 30_000 },
        );
      const dir = ['--dir', (await testIssuer()).dir];
      const written = await npm(...dir, '--out', file);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const token = readFileSync(file, 'utf8');
      expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+\n$/); // the token alone, nothing of npm's
      expect(written.stdout).not.toContain(token.trim());
      expect(written.stderr).toContain(`operator-bob, audience console, until `);
      const res = await call('POST', '/api/session', { body: { token: token.trim() } });
      expect(res.body).toMatchObject({ signedIn: true, subject: 'operator-bob' });
      // Without --out the token is stdout's only line of its own; npm's banner is above it,
      // and the hint on stderr says so.
      const printed = await npm(...dir);
      expect(printed.stdout.trim().split('\n').pop()).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(printed.stderr).toContain('use --out FILE');
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('says who is signed in to nobody without a session', async () => {
    const res = await call('GET', '/api/session');
    expect(res.body).toEqual({ signedIn: false, signIn: 'token', via: 'console' });
    for (const p of ['/api/overview', '/api/events']) {
      const refused = await call('GET', p);
      expect(refused.status).toBe(401);
      expect(refused.body).toMatchObject({ code: 'UNAUTHENTICATED', message: 'sign in first' });
    }
  });
});

describe('every action carries the anti-CSRF token and is taken as the person', () => {
  it('refuses an action without a session, without the token and with a wrong one; none reaches a service', async () => {
    const alice = await signIn('operator-alice');
    const before = revokes();
    const cases: [Record<string, string>, number, string][] = [
      [{}, 401, 'UNAUTHENTICATED'],
      [{ cookie: alice.cookie }, 403, 'FORBIDDEN'],
      [{ cookie: alice.cookie, 'x-csrf-token': `${alice.csrf.slice(1)}x` }, 403, 'FORBIDDEN'],
    ];
    for (const [headers, status, code] of cases) {
      const res = await call('POST', '/api/actions/revoke', { headers, body: revokeBody });
      expect([res.status, res.body.code]).toEqual([status, code]);
      if (status === 403) expect(res.body.details).toEqual({ reason: 'csrf' });
    }
    expect(revokes()).toBe(before);
  });

  it("sends the action with the console's token and the person's in X-Acting-For", async () => {
    const alice = await signIn('operator-alice');
    const res = await call('POST', '/api/actions/revoke', {
      headers: { cookie: alice.cookie, 'x-csrf-token': alice.csrf, origin },
      body: revokeBody,
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ key: 'payout:a', ...REVOKED });
    const sent = seen.filter((s) => s.method === 'POST').at(-1)!;
    expect(sent.path).toBe('/v1/locks/payout%3Aa/revoke');
    expect(sent.headers['x-acting-for']).toBe(alice.token);
    const outer = String(sent.headers.authorization).replace('Bearer ', '').split('.')[1];
    expect(JSON.parse(Buffer.from(outer, 'base64url').toString())).toMatchObject({
      sub: 'console',
      aud: 'lock-server',
    });
    expect(JSON.parse(sent.body)).toEqual({
      operator: 'operator-alice',
      reason: revokeBody.reason,
      expectedToken: revokeBody.expectedToken,
    });
  });
});

describe('Host and Origin (DNS rebinding, cross-site requests)', () => {
  it('refuses a Host that is not the console, for the page and the API alike', async () => {
    for (const p of ['/', '/api/session']) {
      const res = await call('GET', p, { headers: { host: `rebound.example:${consoleApp.port}` } });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'FORBIDDEN', details: { reason: 'host' } });
    }
    expect(
      (await call('GET', '/', { headers: { host: `localhost:${consoleApp.port}` } })).status,
    ).toBe(200);
    // Probes come by pod IP.
    expect(
      (await call('GET', '/health/ready', { headers: { host: '10.9.8.7:8090' } })).status,
    ).toBe(200);
  });

  it('refuses a cross-origin action even with a valid session and token', async () => {
    const alice = await signIn('operator-alice');
    const before = revokes();
    const own = { cookie: alice.cookie, 'x-csrf-token': alice.csrf };
    for (const extra of [
      { origin: 'http://evil.example' },
      { 'sec-fetch-site': 'cross-site' },
    ] as Record<string, string>[]) {
      const res = await call('POST', '/api/actions/revoke', {
        headers: { ...own, ...extra },
        body: revokeBody,
      });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'FORBIDDEN', details: { reason: 'origin' } });
    }
    const signInFromElsewhere = await call('POST', '/api/session', {
      headers: { origin: 'http://evil.example' },
      body: { token: alice.token },
    });
    expect(signInFromElsewhere.status).toBe(403);
    expect(revokes()).toBe(before);
  });
});

describe('signing out', () => {
  it('needs the anti-CSRF token, then ends the session for good', async () => {
    const alice = await signIn('operator-alice');
    const refused = await call('DELETE', '/api/session', { headers: { cookie: alice.cookie } });
    expect(refused.status).toBe(403);
    expect((await call('GET', '/api/overview', { headers: { cookie: alice.cookie } })).status).toBe(
      200,
    );
    const out = await call('DELETE', '/api/session', {
      headers: { cookie: alice.cookie, 'x-csrf-token': alice.csrf },
    });
    expect(out.status).toBe(204);
    expect(out.headers['set-cookie']?.[0]).toMatch(/^dlock_console_session=; Path=\/; Expires=/);
    for (const [method, p] of [
      ['GET', '/api/overview'],
      ['POST', '/api/actions/revoke'],
    ]) {
      const res = await call(method, p, {
        headers: { cookie: alice.cookie, 'x-csrf-token': alice.csrf },
        body: method === 'POST' ? revokeBody : undefined,
      });
      expect(res.status).toBe(401);
    }
  });
});

describe('behind a proxy that signs people in (CONSOLE_SIGN_IN=header, e.g. IAP)', () => {
  let proxied: RunningApp;
  const iap = 'x-goog-iap-jwt-assertion';

  beforeAll(async () => {
    proxied = await spawnApp('console', {
      LOCK_SERVER_URL: fakeUrl,
      PAYMENT_RESOURCE_URL: fakeUrl,
      RAIL_PROXY_URL: fakeUrl,
      CONSOLE_EVENT_POLL_MS: '60000',
      CONSOLE_SIGN_IN: 'header',
    });
  });
  afterAll(() => proxied?.stop());

  it("signs in with the proxy's token, forwards the freshest one, and ends if the person changes", async () => {
    const issuer = await testIssuer();
    const nowSec = Math.floor(Date.now() / 1000);
    const first = await issuer.mint('operator-alice', 'console', { nowSec, ttlSec: 600 });
    expect((await call('GET', '/api/session', { app: proxied })).body).toEqual({
      signedIn: false,
      signIn: 'header',
      via: 'console',
    });
    const noHeader = await call('POST', '/api/session', { app: proxied, body: {} });
    expect([noHeader.status, noHeader.body.code]).toEqual([401, 'UNAUTHENTICATED']);
    const res = await call('POST', '/api/session', {
      app: proxied,
      body: {},
      headers: { [iap]: first },
    });
    expect(res.body).toMatchObject({ signedIn: true, subject: 'operator-alice' });
    const own = {
      cookie: String(res.headers['set-cookie']?.[0]).split(';')[0],
      'x-csrf-token': res.body.csrfToken as string,
    };
    // A later request carries a newer assertion: the action goes with that one.
    const fresher = await issuer.mint('operator-alice', 'console', { nowSec: nowSec + 5 });
    const acted = await call('POST', '/api/actions/revoke', {
      app: proxied,
      body: revokeBody,
      headers: { ...own, [iap]: fresher },
    });
    expect(acted.status).toBe(200);
    expect(seen.filter((x) => x.method === 'POST').at(-1)!.headers['x-acting-for']).toBe(fresher);
    // Someone else behind the same browser session: the session ends, nothing is sent.
    const before = revokes();
    const bob = await issuer.mint('operator-bob', 'console');
    const changed = await call('POST', '/api/actions/revoke', {
      app: proxied,
      body: revokeBody,
      headers: { ...own, [iap]: bob },
    });
    expect([changed.status, changed.body.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect(revokes()).toBe(before);
    expect((await call('GET', '/api/overview', { app: proxied, headers: own })).status).toBe(401);
  });
});
