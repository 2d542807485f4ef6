import {
  ContentionError,
  DlockError,
  FencedOutError,
  LockLostError,
  SessionLostError,
  ValidationError,
} from '@dlock/lock-api';
import { LockServerUnavailableError, ProtocolError } from './errors';
import {
  ACQUIRE_RETRY_BUDGET,
  backoffDelayMs,
  classifyAcquireFailure,
  retryAcquire,
} from './retry-policy';

const contended = (retryAfterMillis?: number) =>
  new DlockError('LOCK_CONTENDED', 'held', { retryAfterMillis, details: { holderOwnerId: 'w2' } });

/** Deterministic deps: a scripted random and a sleep that only records. */
function deps(randoms: number[] = [0.5], signal?: AbortSignal) {
  const sleeps: number[] = [];
  let i = 0;
  return {
    sleeps,
    random: () => randoms[i++ % randoms.length],
    sleep: async (ms: number, s?: AbortSignal) => {
      if (s?.aborted) throw s.reason;
      sleeps.push(ms);
    },
    signal,
  };
}

describe('backoffDelayMs (full jitter, 50 ms -> 1 s)', () => {
  it('caps each wait at min(1000, 50 * 2^n) and never goes below 0', () => {
    const ceilings = [50, 100, 200, 400, 800, 1000, 1000, 1000];
    ceilings.forEach((ceiling, n) => {
      expect(backoffDelayMs(n, () => 0)).toBe(0);
      expect(backoffDelayMs(n, () => 0.999999)).toBe(ceiling - 1);
      expect(backoffDelayMs(n, () => 0.5)).toBe(ceiling / 2);
    });
  });

  it('is uniform over the whole [0, ceiling) range (full jitter, not equal jitter)', () => {
    const values = Array.from({ length: 10 }, (_, k) => backoffDelayMs(3, () => k / 10));
    expect(values).toEqual([0, 40, 80, 120, 160, 200, 240, 280, 320, 360]);
  });

  it('clamps a misbehaving random source into range', () => {
    expect(backoffDelayMs(0, () => -3)).toBe(0);
    expect(backoffDelayMs(0, () => 7)).toBe(50);
  });

  it('treats retryAfterMillis as a floor', () => {
    expect(backoffDelayMs(0, () => 0.5, 300)).toBe(300);
    expect(backoffDelayMs(4, () => 0.9, 10)).toBe(720);
  });
});

describe('classifyAcquireFailure: which failures retry', () => {
  it.each([
    ['LOCK_CONTENDED', contended(), 'contended'],
    ['CONTENTION_EXCEEDED', new ContentionError('throttled'), 'contended'],
    ['NOT_LEADER', new DlockError('NOT_LEADER', 'follower'), 'transient'],
    ['connect failure', new LockServerUnavailableError('connect', 'refused'), 'transient'],
    ['read timeout', new LockServerUnavailableError('response', 'slow'), 'final'],
    ['FENCED_OUT', new FencedOutError(), 'final'],
    ['LOCK_LOST', new LockLostError(), 'final'],
    ['SESSION_EXPIRED', new SessionLostError('SESSION_EXPIRED', 'gone'), 'final'],
    ['SESSION_UNKNOWN', new SessionLostError('SESSION_UNKNOWN', 'gone'), 'final'],
    ['VALIDATION_FAILED', new ValidationError([]), 'final'],
    ['UNAVAILABLE (503 from a server)', new DlockError('UNAVAILABLE', 'x'), 'final'],
    ['INTERNAL', new DlockError('INTERNAL', 'x'), 'final'],
    ['malformed response', new ProtocolError('bad', 502), 'final'],
    ['plain Error', new Error('bug'), 'final'],
  ])('%s -> %s', (_name, err, verdict) => {
    expect(classifyAcquireFailure(err)).toBe(verdict);
  });
});

describe('retryAcquire', () => {
  it('returns the first success without waiting', async () => {
    const d = deps();
    await expect(retryAcquire(async () => 'granted', d)).resolves.toBe('granted');
    expect(d.sleeps).toEqual([]);
  });

  it('retries contention with growing jittered waits and succeeds inside the budget', async () => {
    const d = deps([0.5]);
    let calls = 0;
    const result = await retryAcquire(async () => {
      calls++;
      if (calls < 4) throw contended();
      return 'granted';
    }, d);
    expect(result).toBe('granted');
    expect(calls).toBe(4);
    expect(d.sleeps).toEqual([25, 50, 100]);
  });

  it('spends exactly 6 attempts (5 retries), then throws ContentionError carrying the last details', async () => {
    const d = deps([0.999999]);
    let calls = 0;
    const failure = await retryAcquire(async () => {
      calls++;
      throw contended(20);
    }, d).catch((e: unknown) => e);
    expect(calls).toBe(ACQUIRE_RETRY_BUDGET.attemptsMax);
    expect(calls).toBe(ACQUIRE_RETRY_BUDGET.retriesMax + 1);
    expect(calls).toBe(6);
    // The caps 50, 100, 200, 400, 800 ms: all under the 1 s ceiling (docs/contract.md, "Retry counts").
    expect(d.sleeps).toEqual([49, 99, 199, 399, 799]);
    expect(failure).toBeInstanceOf(ContentionError);
    expect(failure).toMatchObject({
      code: 'CONTENTION_EXCEEDED',
      retrySafe: true,
      retryAfterMillis: 20,
      details: { holderOwnerId: 'w2', attempts: 6 },
    });
  });

  it('never waits more than the 1 s ceiling, however late the retry', () => {
    expect(ACQUIRE_RETRY_BUDGET).toEqual({
      retriesMax: 5,
      attemptsMax: 6,
      baseDelayMs: 50,
      maxDelayMs: 1_000,
    });
    expect([5, 6, 20].map((i) => backoffDelayMs(i, () => 0.999999))).toEqual([999, 999, 999]);
  });

  it('honours retryAfterMillis from 429 CONTENTION_EXCEEDED and 409 LOCK_CONTENDED', async () => {
    const d = deps([0]);
    const answers = [
      new ContentionError('throttled', { retryAfterMillis: 750 }),
      contended(120),
      null,
    ];
    let i = 0;
    await retryAcquire(async () => {
      const next = answers[i++];
      if (next) throw next;
      return 'granted';
    }, d);
    expect(d.sleeps).toEqual([750, 120]);
  });

  it('retries NOT_LEADER and connect failures in the same budget, and rethrows the last one', async () => {
    const d = deps([0]);
    let calls = 0;
    const failure = await retryAcquire(async () => {
      calls++;
      throw calls % 2 === 0
        ? new DlockError('NOT_LEADER', 'x')
        : new LockServerUnavailableError('connect', 'x');
    }, d).catch((e: unknown) => e);
    expect(calls).toBe(6);
    expect(failure).toBeInstanceOf(DlockError);
    expect((failure as DlockError).code).toBe('NOT_LEADER');
  });

  it.each([
    ['FENCED_OUT', new FencedOutError()],
    ['read timeout', new LockServerUnavailableError('response', 'x')],
    ['SESSION_EXPIRED', new SessionLostError('SESSION_EXPIRED', 'x')],
    ['VALIDATION_FAILED', new ValidationError([])],
  ])('never retries %s', async (_name, err) => {
    const d = deps();
    let calls = 0;
    await expect(
      retryAcquire(async () => {
        calls++;
        throw err;
      }, d),
    ).rejects.toBe(err);
    expect(calls).toBe(1);
    expect(d.sleeps).toEqual([]);
  });

  it('stops at once when the signal aborts during a wait', async () => {
    const controller = new AbortController();
    const reason = new Error('shutting down');
    let calls = 0;
    const failure = await retryAcquire(
      async () => {
        calls++;
        throw contended();
      },
      {
        random: () => 0.5,
        signal: controller.signal,
        sleep: async (_ms, s) => {
          controller.abort(reason);
          if (s?.aborted) throw s.reason;
        },
      },
    ).catch((e: unknown) => e);
    expect(failure).toBe(reason);
    expect(calls).toBe(1);
  });

  it('does not start when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('already'));
    let calls = 0;
    await expect(
      retryAcquire(
        async () => {
          calls++;
          return 'x';
        },
        deps([0.5], controller.signal),
      ),
    ).rejects.toThrow('already');
    expect(calls).toBe(0);
  });
});
