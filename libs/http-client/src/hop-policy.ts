import { DlockError } from '@dlock/lock-api';
import { abortReason, PeerUnavailableError, type CallBudget } from './errors';

/**
 * The service hops' budgets (docs/contract.md), one table for the executor and the
 * reconciler, which make the same kinds of call. Fixed contract numbers. The
 * SDK keeps its own lock-server table (CALL_BUDGETS, public API); the
 * executor's submit follows the rail's timeout (apps/executor lease.rules.ts).
 */
export const HOP_BUDGETS = Object.freeze({
  /** P2, P3, P6, P8 and the floor raises: conditional writes. */
  fencedWrite: Object.freeze({ connectTimeoutMs: 500, readTimeoutMs: 3_000 }),
  /** P1, P4, R2, S2, the revocation list: advisory reads. */
  advisoryRead: Object.freeze({ connectTimeoutMs: 300, readTimeoutMs: 1_000 }),
}) satisfies Record<string, CallBudget>;

/**
 * Which failures a hop may re-send, and how often. This is the one retry
 * layer of service-to-service calls; budgets are fixed, not tunable:
 * - `advisoryRead`, `idempotentWrite`: 2 retries on any transient failure
 *   (transport failure or 503); sending twice changes nothing.
 * - `fencedWrite`: 1 retry, only when nothing can have happened (no
 *   connection made, or the peer's own 503).
 * - `submit`: never. A second presentation re-enters the proxy's admission.
 * Any other answer (409 FENCED_OUT, 4xx) means the world moved on: final.
 */
export const HOP_RETRIES = Object.freeze({
  advisoryRead: Object.freeze({ retries: 2, when: 'transient' }),
  idempotentWrite: Object.freeze({ retries: 2, when: 'transient' }),
  fencedWrite: Object.freeze({ retries: 1, when: 'nothing-happened' }),
  submit: Object.freeze({ retries: 0, when: 'never' }),
} as const);

export type HopKind = keyof typeof HOP_RETRIES;

/** Wait before a retry, unless the peer asked for longer (capped). */
export const RETRY_DELAY_MS = 100;
export const RETRY_DELAY_MAX_MS = 1_000;

/** 503 or a connection that was never made: nothing happened at the peer. */
export function nothingHappened(err: unknown): boolean {
  if (err instanceof PeerUnavailableError) return err.phase === 'connect';
  return err instanceof DlockError && err.httpStatus === 503;
}

/** Any transport failure or a 503. */
export function transientFailure(err: unknown): boolean {
  return (
    err instanceof PeerUnavailableError || (err instanceof DlockError && err.httpStatus === 503)
  );
}

function retryable(kind: HopKind, err: unknown): boolean {
  const { when } = HOP_RETRIES[kind];
  switch (when) {
    case 'transient':
      return transientFailure(err);
    case 'nothing-happened':
      return nothingHappened(err);
    case 'never':
      return false;
  }
}

/** How a retry waits: a real timer, or the simulation's virtual clock (docs/harness.md). */
export type HopSleep = (ms: number, signal?: AbortSignal) => Promise<void>;

const timerSleep: HopSleep = (ms, signal) => {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
};

/** Runs `attempt` under the hop kind's budget; the last failure is rethrown as is. */
export async function withHopRetries<T>(
  kind: HopKind,
  attempt: () => Promise<T>,
  signal?: AbortSignal,
  sleep: HopSleep = timerSleep,
): Promise<T> {
  const { retries } = HOP_RETRIES[kind];
  for (let i = 0; ; i++) {
    if (signal?.aborted) throw abortReason(signal);
    try {
      return await attempt();
    } catch (err) {
      if (i >= retries || !retryable(kind, err)) throw err;
      const after = err instanceof DlockError ? err.retryAfterMillis : undefined;
      await sleep(Math.min(RETRY_DELAY_MAX_MS, after ?? RETRY_DELAY_MS), signal);
    }
  }
}
