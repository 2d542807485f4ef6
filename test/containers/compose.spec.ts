import { freePort, sleep, waitFor } from '@dlock/testing';
import { baseImages, compose, docker, DLOCK_IMAGE, requireEngineAndImages } from './docker';

/**
 * `docker compose up` of docker-compose.yml brings the whole system up (docs/operations.md,
 * "docker compose"): the issuer's keys and tokens in the `identity` volume, the migrations
 * through the TypeORM CLI in `migrate`, every service ready by its probe, the console, the
 * demo's payouts flowing. A revoke asked for through the console's API fences the executor
 * that held the lock, and the payout is still paid. `docker compose down` leaves nothing.
 * The observability services (jaeger, prometheus, grafana) are not started: their images come
 * from a registry this machine may not have. The stack runs on the project's own bridge
 * network compose creates; the host reaches it through ports published on 127.0.0.1.
 */
jest.setTimeout(900_000);

const PROJECT = `dlock-compose-test-${process.pid}`;
const APPS = [
  'lock-server',
  'payment-resource',
  'rail-stub',
  'rail-proxy',
  'executor',
  'reconciler',
  'console',
] as const;
type App = (typeof APPS)[number];
const ONE_SHOTS = ['migrate', 'seed'];
const SERVICES = ['pg-lock', 'pg-pay', 'identity', ...ONE_SHOTS, 'feed', ...APPS];
const UP_DEADLINE_MS = 420_000;
const WAIT_MS = 60_000;
/** A rail call this slow keeps the executor's lock long enough to be seen and revoked. */
const SLOW_CALL_MS = 10_000;

const ports = {} as Record<App, number>;
let env: NodeJS.ProcessEnv;
let upStartedAt = 0;
const readyAfterStartMs = {} as Record<App, number>;
let upToPayoutsMs = 0;

const url = (app: App, p: string) => `http://127.0.0.1:${ports[app]}${p}`;
const portVar = (app: App) => `DLOCK_PORT_${app.toUpperCase().replace('-', '_')}`;

async function containerOf(service: string): Promise<string> {
  return compose(['-p', PROJECT, 'ps', '-q', service], env);
}

async function state(service: string): Promise<{ status: string; exit: number; started: string }> {
  const id = await containerOf(service);
  if (id === '') return { status: 'absent', exit: -1, started: '' };
  const [status, exit, started] = (
    await docker([
      'inspect',
      '--format',
      '{{.State.Status}} {{.State.ExitCode}} {{.State.StartedAt}}',
      id,
    ])
  ).split(' ');
  return { status, exit: Number(exit), started };
}

/** The ready probe's status and body, for a failure's message. */
async function readyAnswer(app: App): Promise<string> {
  return fetch(url(app, '/health/ready'), { signal: AbortSignal.timeout(5_000) }).then(
    async (res) => `${res.status} ${(await res.text()).slice(0, 300)}`,
    (err: unknown) => String(err),
  );
}

async function ready(app: App): Promise<boolean> {
  return fetch(url(app, '/health/ready'), { signal: AbortSignal.timeout(2_000) }).then(
    (res) => res.ok,
    () => false,
  );
}

/** Each app's time from its container's start to its first ready answer, polled every 100 ms. */
async function watchReadiness(): Promise<void> {
  const deadline = Date.now() + UP_DEADLINE_MS;
  const waiting = new Set<App>(APPS);
  while (waiting.size > 0) {
    if (Date.now() > deadline) throw new Error(`not ready: ${[...waiting].join(', ')}`);
    for (const app of [...waiting]) {
      if (!(await ready(app))) continue;
      const { started } = await state(app);
      readyAfterStartMs[app] = Date.now() - Date.parse(started);
      waiting.delete(app);
    }
    await sleep(100);
  }
}

interface ConsoleSession {
  cookie: string;
  csrf: string;
}

/** Consoles refuse another Host and another Origin: every call names the console itself. */
async function consoleCall(method: string, p: string, session?: ConsoleSession, body?: unknown) {
  const origin = `http://127.0.0.1:${ports.console}`;
  const headers: Record<string, string> = { origin, 'content-type': 'application/json' };
  if (session) Object.assign(headers, { cookie: session.cookie, 'x-csrf-token': session.csrf });
  const res = await fetch(url('console', p), {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

/** A person's token from the issuer in the identity volume (npm run identity:token). */
async function signIn(subject: string): Promise<ConsoleSession> {
  const id = await containerOf('identity');
  const token = await docker([
    'exec',
    id,
    'node',
    'dist/scripts/identity-token.js',
    '--subject',
    subject,
    '--dir',
    '/identity',
  ]);
  const res = await consoleCall('POST', '/api/session', undefined, { token });
  expect(res.status).toBe(200);
  const cookie = String(res.headers.get('set-cookie') ?? '').split(';')[0];
  return { cookie, csrf: res.body.csrfToken as string };
}

async function posted(session: ConsoleSession): Promise<number> {
  const res = await consoleCall('GET', '/api/overview', session);
  expect(res.status).toBe(200);
  return res.body.stats.ok ? (res.body.stats.data.byState.POSTED as number) : 0;
}

async function metricSum(app: App, name: string, label: string): Promise<number> {
  const text = await (await fetch(url(app, '/metrics'))).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith(name) && line.includes(label))
    .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
}

beforeAll(async () => {
  const images = baseImages();
  await requireEngineAndImages([DLOCK_IMAGE, images.DLOCK_POSTGRES_IMAGE]);
  for (const app of APPS) ports[app] = await freePort();
  env = {
    ...process.env,
    ...images,
    ...Object.fromEntries(APPS.map((app) => [portVar(app), String(ports[app])])),
    // No trace viewer in this run: ids still propagate, nothing is exported.
    OTEL_TRACES_EXPORTER: 'none',
    DLOCK_FEED_RATE: '5',
  };
  upStartedAt = Date.now();
  // -d returns once every service is started, each after what it depends on.
  const up = compose(['-p', PROJECT, 'up', '-d', '--no-build', ...SERVICES], env);
  const [upDone, readyDone] = await Promise.allSettled([up, watchReadiness()]);
  // Both settled: a failed `up` no longer starts anything behind the `down` of afterAll.
  const failed = [upDone, readyDone].find((r) => r.status === 'rejected');
  if (failed === undefined) return;
  // What each service said: the reader of a failure needs it before `down` removes it.
  const ready = await Promise.all(APPS.map(async (app) => `${app}: ${await readyAnswer(app)}`));
  const logs = await compose(['-p', PROJECT, 'logs', '--no-color', '--tail', '8'], env).catch(
    String,
  );
  throw new Error(`${String(failed.reason)}\n${ready.join('\n')}\n${logs}`);
});

afterAll(async () => {
  if (env === undefined) return;
  await compose(['-p', PROJECT, 'down', '-v', '--remove-orphans', '-t', '5'], env).catch(
    (err: unknown) => console.error(`compose down failed: ${String(err)}`),
  );
  const left = await docker([
    'ps',
    '-aq',
    '--filter',
    `label=com.docker.compose.project=${PROJECT}`,
  ]);
  expect(left).toBe('');
});

it('runs the migrations through the TypeORM CLI and seeds, each one-shot exiting 0', async () => {
  for (const service of ONE_SHOTS) {
    await waitFor(async () => (await state(service)).status === 'exited', WAIT_MS, service);
    expect(await state(service)).toMatchObject({ status: 'exited', exit: 0 });
  }
  // Each database holds TypeORM's record of the migrations the CLI ran.
  for (const [service, db] of [
    ['pg-lock', 'lockdb'],
    ['pg-pay', 'paydb'],
    ['pg-pay', 'proxydb'],
  ]) {
    const id = await containerOf(service);
    const sql = 'SELECT count(*) FROM migrations';
    const count = await docker(['exec', id, 'psql', '-U', 'postgres', '-d', db, '-tAc', sql]);
    expect(Number(count)).toBeGreaterThan(0);
  }
});

it('every service answers ready; each uid is 1000 and the issuer wrote its volume', async () => {
  for (const app of APPS) expect(await ready(app)).toBe(true);
  for (const service of ['identity', ...APPS]) {
    const id = await containerOf(service);
    expect(await docker(['exec', id, 'id', '-u'])).toBe('1000');
  }
  const id = await containerOf('identity');
  expect(await docker(['exec', id, 'ls', '/identity'])).toMatch(/jwks\.json/);
  console.log(
    `compose: ready after container start (ms): ${JSON.stringify(readyAfterStartMs)}; ` +
      `all ready ${Date.now() - upStartedAt} ms after up`,
  );
});

it('payouts flow, seen through the console', async () => {
  const alice = await signIn('operator-alice');
  const first = await waitFor(
    async () => (await posted(alice)) > 0 && posted(alice),
    WAIT_MS,
    'a POSTED payout',
  );
  upToPayoutsMs = Date.now() - upStartedAt;
  await waitFor(async () => (await posted(alice)) > first, WAIT_MS, 'more POSTED payouts');
  console.log(`compose: first payout POSTED ${upToPayoutsMs} ms after up`);
});

it("a revoke through the console's API fences the executor holding the lock; payouts go on", async () => {
  const alice = await signIn('operator-alice');
  const fencedBefore = await metricSum('executor', 'executor_payout_attempts_total', 'fenced');
  const slow = await fetch(url('rail-stub', '/admin/faults'), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ slowRate: 1, slowLatencyMs: SLOW_CALL_MS }),
  });
  expect(slow.status).toBe(200);
  let revoked: { key: string; token: string };
  try {
    // A payout lock held through a slow rail call.
    revoked = await waitFor(
      async () => {
        const res = await consoleCall('GET', '/api/overview', alice);
        const locks = res.body.locks.ok ? res.body.locks.data.locks : [];
        const held = locks.find(
          (l: { key: string; ownerId: string; leaseRemainingMillis: number }) =>
            l.key.startsWith('payout:') && l.ownerId === 'compose-executor-1',
        );
        return held && { key: held.key as string, token: held.token as string };
      },
      WAIT_MS,
      "the executor's payout lock",
    );
    const res = await consoleCall('POST', '/api/actions/revoke', alice, {
      key: revoked.key,
      reason: 'compose test: fence the holder mid rail call',
      expectedToken: revoked.token,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ key: revoked.key, revokedToken: revoked.token });
  } finally {
    await fetch(url('rail-stub', '/admin/faults'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slowRate: 0 }),
    });
  }
  // The holder's write under the revoked token is refused: it counts a fenced attempt.
  await waitFor(
    async () =>
      (await metricSum('executor', 'executor_payout_attempts_total', 'fenced')) > fencedBefore,
    WAIT_MS,
    'the holder fenced',
  );
  const after = await posted(alice);
  await waitFor(async () => (await posted(alice)) > after, WAIT_MS, 'payouts after the revoke');
});
