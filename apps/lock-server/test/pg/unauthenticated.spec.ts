import { http, migratedDatabase, spawnApp, type RunningApp } from '@dlock/testing';
import { LockApi, TRACE_ID } from '../support/lock-client';

const PER_SOURCE_MAX = 50;
const LOG_LINES_MAX = 10;
const GARBAGE = 500;
/** Longer than the test: every request falls in one window, free of wall-clock races. */
const WINDOW_MS = 120_000;

/**
 * Garbage bearer tokens cost the lock-server little (docs/security.md,
 * "Limits"): against the built process, refusal log lines are sampled so the
 * log does not grow with the garbage, a source address past its allowance is
 * answered 429 in the contract's envelope, the refusal metric still counts
 * every one, and a caller with a valid token from the same address is served.
 */
describe('lock-server process: requests with a garbage bearer token', () => {
  let server: RunningApp;

  beforeAll(async () => {
    server = await spawnApp('lock-server', {
      LOCK_BACKEND: 'pg',
      LOCKDB_URL: await migratedDatabase('lockdb'),
      LOG_LEVEL: 'info',
      LOCK_UNAUTHENTICATED_RATE_LIMIT: String(PER_SOURCE_MAX),
      LOCK_UNAUTHENTICATED_RATE_WINDOW_MS: String(WINDOW_MS),
      LOCK_REFUSAL_LOG_LINES_MAX: String(LOG_LINES_MAX),
    });
  });
  afterAll(() => server.stop());

  const garbage = () =>
    http('POST', `${server.url}/v1/sessions`, {
      headers: { authorization: 'Bearer garbage' },
      body: { ownerId: 'mallory' },
    });

  it('are refused, then limited per address, with a log that does not grow with them', async () => {
    const logBefore = server.output().length;
    const answers: { status: number; body: unknown }[] = [];
    for (let i = 0; i < GARBAGE; i++) {
      const res = await garbage();
      answers.push({ status: res.status, body: res.body });
    }
    const unauthenticated = {
      status: 401,
      body: {
        code: 'UNAUTHENTICATED',
        message: 'Authorization must be "Bearer <JWT>"',
        retrySafe: true,
        traceId: TRACE_ID,
      },
    };
    const limited = {
      status: 429,
      body: {
        code: 'CONTENTION_EXCEEDED',
        message: 'too many unauthenticated requests from this address',
        retrySafe: true,
        retryAfterMillis: expect.any(Number),
        details: {
          reason: 'unauthenticated-rate-limit',
          limit: PER_SOURCE_MAX,
          windowMs: WINDOW_MS,
        },
        traceId: TRACE_ID,
      },
    };
    expect(answers.slice(0, PER_SOURCE_MAX)).toEqual(Array(PER_SOURCE_MAX).fill(unauthenticated));
    expect(answers.slice(PER_SOURCE_MAX)).toEqual(Array(GARBAGE - PER_SOURCE_MAX).fill(limited));
    const hint = (answers[GARBAGE - 1].body as { retryAfterMillis: number }).retryAfterMillis;
    expect(hint).toBeGreaterThan(0);
    expect(hint).toBeLessThanOrEqual(WINDOW_MS);

    // The log: at most LOG_LINES_MAX refusal lines for 500 refusals, and a few KB in all.
    const log = server.output().slice(logBefore);
    expect(log.match(/"event":"auth_refused"/g)?.length).toBe(LOG_LINES_MAX);
    expect(log.length).toBeLessThan(LOG_LINES_MAX * 1_000);
    // The metric still counts every refusal.
    const metrics = (await http('GET', `${server.url}/metrics`, { noAuth: true })).text;
    expect(metrics).toContain(`auth_refusals_total{refusal="unauthenticated"} ${GARBAGE}`);

    // Nothing was opened for anyone, and a valid caller from the same address is served.
    const api = new LockApi(server.url);
    const session = await api.openSession('honest');
    expect(session.status).toBe(201);
    expect((await api.heartbeat(session.body.sessionId as string, 'honest')).status).toBe(200);
  });
});
