import { performance } from 'node:perf_hooks';
import { sleep } from '@dlock/testing';
import { BACKENDS } from '../support/backends';
import { checkHistory, HistoryRecorder } from '../support/history-checker';
import type { RunningLockServer } from '../support/in-process';
import { LockApi } from '../support/lock-client';

const WORKERS = 12;
const ROUNDS_PER_WORKER = 15;
const DEADLINE_MS = 25_000;
const RELEASE_ATTEMPTS_MAX = 10;

describe.each(BACKENDS)('mutual exclusion under load [$name]', (backend) => {
  let server: RunningLockServer;
  let api: LockApi;

  beforeAll(async () => {
    server = await backend.start({ LOCK_WAITERS_MAX: String(WORKERS) });
    api = new LockApi(server.url);
  });
  afterAll(() => server.stop());

  it('never grants one key twice at once, and tokens rise in grant order', async () => {
    const recorder = new HistoryRecorder();
    const key = 'race:one';
    const deadline = performance.now() + DEADLINE_MS;
    const outcomes = { contended: 0, released: 0, unavailable: 0 };

    async function worker(n: number): Promise<void> {
      const owner = `w${n}`;
      const session = await api.session(owner, 30_000);
      for (let round = 0; round < ROUNDS_PER_WORKER && performance.now() < deadline; round++) {
        // Half the workers wait server-side, half retry on their own.
        const res = await api.acquire(key, session, owner, {
          ttlMillis: 20_000,
          waitMillis: n % 2 === 0 ? 2_000 : 0,
        });
        if (res.status === 409) {
          outcomes.contended++;
          await sleep(1 + Math.random() * 5);
          continue;
        }
        // A retry-safe 503 (an etcd election on a loaded machine, a budget the server
        // could not meet) granted nothing; the contract lets the caller try again.
        if (res.status === 503 && res.body.retrySafe === true) {
          outcomes.unavailable++;
          await sleep(5 + Math.random() * 20);
          continue;
        }
        expect(res.status).toBe(200);
        const record = recorder.granted(key, owner, res.body.fencingToken);
        if (Math.random() < 0.5) await sleep(Math.random() * 3);
        const sentAt = performance.now();
        await releaseRetrying(key, session, res.body.fencingToken, owner);
        recorder.released(record, sentAt);
        outcomes.released++;
      }
    }

    /**
     * A retry-safe 503 on release (an etcd call past its deadline on a loaded
     * machine) is sent again, as the SDK does; after such an answer, LOCK_LOST
     * means the first release landed. Anything else is a failure.
     */
    async function releaseRetrying(
      k: string,
      session: string,
      token: string,
      owner: string,
    ): Promise<void> {
      let unsure = false;
      for (let attempt = 0; attempt < RELEASE_ATTEMPTS_MAX; attempt++) {
        const rel = await api.release(k, session, token, owner);
        if (rel.status === 204) return;
        if (unsure && rel.status === 409 && rel.body.code === 'LOCK_LOST') return;
        expect({ status: rel.status, retrySafe: rel.body.retrySafe }).toEqual({
          status: 503,
          retrySafe: true,
        });
        outcomes.unavailable++;
        unsure = true;
        await sleep(20);
      }
      throw new Error(`release of ${k} still unavailable after ${RELEASE_ATTEMPTS_MAX} attempts`);
    }

    await Promise.all(Array.from({ length: WORKERS }, (_, n) => worker(n)));
    const verdict = checkHistory(recorder.records);
    expect(verdict.violations).toEqual([]);
    expect(verdict.grants).toBeGreaterThanOrEqual(WORKERS * 3);
    expect(outcomes.unavailable).toBeLessThan(verdict.grants);
    expect(outcomes.released).toBe(verdict.grants);
    const tokens = recorder.records.map((r) => r.token);
    expect(new Set(tokens).size).toBe(tokens.length);
  });

  it('the checker itself flags an overlap and a token that did not rise', () => {
    const verdict = checkHistory([
      { key: 'k', holder: 'a', token: 5n, grantedAt: 0, releaseSentAt: 10 },
      { key: 'k', holder: 'b', token: 4n, grantedAt: 5, releaseSentAt: 12 },
    ]);
    expect(verdict.violations).toHaveLength(2);
  });

  it('the checker counts a held grant answered again to its own session as one grant, but not after a confirmed release', () => {
    const unconfirmed = checkHistory([
      { key: 'k', holder: 'a', token: 5n, grantedAt: 0, releaseSentAt: null },
      { key: 'k', holder: 'a', token: 5n, grantedAt: 8, releaseSentAt: 12 },
      { key: 'k', holder: 'b', token: 6n, grantedAt: 20, releaseSentAt: null },
    ]);
    expect(unconfirmed.violations).toEqual([]);
    const confirmed = checkHistory([
      { key: 'k', holder: 'a', token: 5n, grantedAt: 0, releaseSentAt: 4 },
      { key: 'k', holder: 'a', token: 5n, grantedAt: 8, releaseSentAt: null },
    ]);
    expect(confirmed.violations).toHaveLength(1);
  });
});
