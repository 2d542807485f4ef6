import { abortReason } from '@dlock/http-client';
import { LockServerUnavailableError, type Transport, type WireResponse } from '@dlock/lock-client';
import type { SimProcess, SimScheduler } from './scheduler.sim';

/** Message faults, as probabilities per message and delays in virtual ms. */
export interface NetworkFaults {
  lossRate: number;
  duplicateRate: number;
  delayMinMs: number;
  delayMaxMs: number;
  /** A message this late (reordering, a slow peer that answers after the caller gave up). */
  slowRate: number;
  slowMs: number;
}

export const CALM_NETWORK: NetworkFaults = {
  lossRate: 0,
  duplicateRate: 0,
  delayMinMs: 1,
  delayMaxMs: 5,
  slowRate: 0,
  slowMs: 0,
};

/** What the caller's budget is, and what it gets when the budget runs out first. */
export interface CallBudget {
  connectTimeoutMs: number;
  readTimeoutMs: number;
}

export type Unavailable = (phase: 'connect' | 'response', message: string) => Error;

/**
 * The simulated network between worker processes and the services
 * (lock-server, payment guard, rail-proxy). A call is two messages: each may
 * be lost, duplicated (the handler runs twice), delayed or very late; a
 * partitioned process reaches nobody. The caller's budget is enforced on
 * virtual time: no answer in time is the same failure, in the same phase, a
 * real transport reports.
 */
export class SimNetwork {
  /** Processes cut off from every service until the virtual time given. */
  readonly partitionedUntil = new Map<string, number>();
  messages = 0;

  constructor(
    private readonly sched: SimScheduler,
    private readonly random: () => number,
    public faults: NetworkFaults,
  ) {}

  partition(process: string, forMs: number): void {
    this.partitionedUntil.set(process, this.sched.now + forMs);
  }

  private cut(process: string): boolean {
    return (this.partitionedUntil.get(process) ?? 0) > this.sched.now;
  }

  private delay(): number {
    const f = this.faults;
    const base = f.delayMinMs + Math.floor(this.random() * (f.delayMaxMs - f.delayMinMs + 1));
    return this.random() < f.slowRate ? base + f.slowMs : base;
  }

  /** One request/answer exchange from `from` to a service whose `handler` answers it. */
  call<T>(
    from: SimProcess,
    handler: () => Promise<T>,
    budget: CallBudget,
    unavailable: Unavailable,
    signal?: AbortSignal,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      let settled = false;
      const settle = (fn: () => void) => {
        if (settled) return;
        settled = true;
        cancelTimeout();
        signal?.removeEventListener('abort', onAbort);
        fn();
      };
      const onAbort = () => settle(() => reject(abortReason(signal!)));
      signal?.addEventListener('abort', onAbort, { once: true });
      const cancelTimeout = from.schedule(budget.connectTimeoutMs + budget.readTimeoutMs, () =>
        settle(() => reject(unavailable('response', 'read timeout (simulated)'))),
      );
      this.messages++;
      if (this.cut(from.name) || this.random() < this.faults.lossRate) {
        // Never reached the peer: after the connect timeout, nothing happened there.
        from.schedule(budget.connectTimeoutMs, () =>
          settle(() => reject(unavailable('connect', 'connect timeout (simulated)'))),
        );
        return;
      }
      const copies = this.random() < this.faults.duplicateRate ? 2 : 1;
      for (let copy = 0; copy < copies; copy++) {
        this.sched.schedule(this.delay(), () => {
          // A handler that throws at once fails its call like one that rejects.
          void (async () => handler())().then(
            (answer) => {
              if (copy > 0) return;
              this.answer(from, () => settle(() => resolve(answer)));
            },
            (err: unknown) => {
              if (copy > 0) return;
              this.answer(from, () =>
                settle(() => reject(err instanceof Error ? err : new Error(String(err)))),
              );
            },
          );
        });
      }
    });
  }

  /** The answer's message back: lost, late, or delivered to the process (if it still lives). */
  private answer(to: SimProcess, deliver: () => void): void {
    this.messages++;
    if (this.cut(to.name) || this.random() < this.faults.lossRate) return;
    to.schedule(this.delay(), deliver);
  }

  /** The lock-client SDK's `transport` port for `from`, to a lock-server answering `serve`. */
  transport(from: SimProcess, serve: Transport): Transport {
    return (request) =>
      this.call<WireResponse>(
        from,
        () => serve(request),
        { connectTimeoutMs: request.connectTimeoutMs, readTimeoutMs: request.readTimeoutMs },
        (phase, message) => new LockServerUnavailableError(phase, message),
        request.signal,
      );
  }
}
