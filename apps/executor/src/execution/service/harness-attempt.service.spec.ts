import { readExecutorConfig } from '../../config';
import type { AttemptPoint } from '../domain/attempt-hooks.port';
import { HarnessAttemptHooks } from './harness-attempt.service';

// The harness's crash and pause points (UC-03, UC-04) in-process: the kill is
// injected here; the spawned executors of apps/executor/test/recovery.spec.ts
// and the harness scenarios die for real.

const POINTS: AttemptPoint[] = [
  'after-claim',
  'after-submitted',
  'before-submit',
  'after-submit',
  'after-ack',
];

describe('crash points', () => {
  it.each(['after-claim', 'after-submitted', 'after-submit', 'after-ack'] as const)(
    'EXECUTOR_CRASH_AT=%s kills at that point only',
    async (crashAt) => {
      const killedAt: AttemptPoint[] = [];
      let current: AttemptPoint = 'after-claim';
      const hooks = new HarnessAttemptHooks(crashAt, 0, () => killedAt.push(current));
      for (const point of POINTS) {
        current = point;
        await hooks.reached(point, new AbortController().signal);
      }
      expect(killedAt).toEqual([crashAt]);
    },
  );

  it('without EXECUTOR_CRASH_AT nothing is killed', async () => {
    const kill = jest.fn();
    const hooks = new HarnessAttemptHooks(undefined, 0, kill);
    for (const point of POINTS) await hooks.reached(point, new AbortController().signal);
    expect(kill).not.toHaveBeenCalled();
  });

  it('reads its points from the validated config', async () => {
    const config = readExecutorConfig({
      OWNER_ID: 'exec-test',
      AUTH_JWKS: '/run/dlock/jwks.json',
      AUTH_ISSUER: 'https://issuer.test',
      AUTH_POLICY: '/run/dlock/policy.yaml',
      AUTH_TOKEN_DIR: '/run/dlock/tokens',
      DLOCK_HARNESS: '1',
      EXECUTOR_CRASH_AT: 'after-submit',
    });
    const hooks = HarnessAttemptHooks.fromConfig(config);
    // The default kill is the real SIGKILL: only a point that is not the crash point is passed here.
    await expect(hooks.reached('after-ack', new AbortController().signal)).resolves.toBeUndefined();
  });
});

describe('the pause before the submit', () => {
  const settled = async (p: Promise<void>): Promise<boolean> => {
    let done = false;
    void p.then(() => (done = true));
    await new Promise((resolve) => setImmediate(resolve));
    return done;
  };

  it('pauses for EXECUTOR_PAUSE_BEFORE_SUBMIT_MS before the submit, and nowhere else', async () => {
    const hooks = new HarnessAttemptHooks(undefined, 300, jest.fn());
    for (const point of POINTS.filter((p) => p !== 'before-submit')) {
      expect(await settled(hooks.reached(point, new AbortController().signal))).toBe(true);
    }
    const startedMs = performance.now();
    const paused = hooks.reached('before-submit', new AbortController().signal);
    expect(await settled(paused)).toBe(false);
    await paused;
    // A lower bound only: a loaded machine makes the pause longer, never shorter.
    expect(performance.now() - startedMs).toBeGreaterThanOrEqual(295);
  });

  it('no pause when it is 0', async () => {
    const hooks = new HarnessAttemptHooks(undefined, 0, jest.fn());
    expect(await settled(hooks.reached('before-submit', new AbortController().signal))).toBe(true);
  });

  it('a stop ends the pause early, without an error', async () => {
    const hooks = new HarnessAttemptHooks(undefined, 600_000, jest.fn());
    const stop = new AbortController();
    const paused = hooks.reached('before-submit', stop.signal);
    expect(await settled(paused)).toBe(false);
    stop.abort();
    await expect(paused).resolves.toBeUndefined();
  });
});
