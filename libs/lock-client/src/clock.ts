import { performance } from 'node:perf_hooks';

/** A scheduled callback; `cancel()` is idempotent. */
export interface Timer {
  cancel(): void;
}

/**
 * The only time source the SDK reads (FR-11). `nowMs()` must be monotonic:
 * a wall clock can step backwards or forwards under NTP and would move a
 * deadline. Injectable so unit tests drive time by hand.
 */
export interface Clock {
  /** Milliseconds on a monotonic scale with an arbitrary origin. */
  nowMs(): number;
  /**
   * Runs `fn` after `delayMs`. Background timers (heartbeat, deadline) must
   * not keep the process alive; a wait the caller is awaiting passes
   * `keepAlive` so a script's pending acquire is not cut short.
   */
  setTimer(fn: () => void, delayMs: number, keepAlive?: boolean): Timer;
}

export const monotonicClock: Clock = {
  nowMs: () => performance.now(),
  setTimer(fn, delayMs, keepAlive = false) {
    const handle = setTimeout(fn, Math.max(0, delayMs));
    if (!keepAlive) handle.unref();
    return { cancel: () => clearTimeout(handle) };
  },
};

/** Resolves after `delayMs` on `clock`, or rejects with the signal's reason when it aborts. */
export function sleepOn(clock: Clock, delayMs: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = () => {
      timer.cancel();
      reject(abortReason(signal!));
    };
    const timer = clock.setTimer(
      () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      },
      delayMs,
      true,
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The signal's reason when it is an Error (AbortSignal.timeout, a LockLostError...), else an AbortError. */
export function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const message = typeof reason === 'string' ? reason : 'The operation was aborted';
  return new DOMException(message, 'AbortError');
}
