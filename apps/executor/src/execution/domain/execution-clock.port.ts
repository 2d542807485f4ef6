import { performance } from 'node:perf_hooks';

/**
 * The executor's clock: a port, so the deterministic simulation runs the
 * service on its virtual time (docs/harness.md, "Deterministic simulation")
 * as the lock-client SDK takes its `clock`. Read for the attempt's duration.
 */
export abstract class ExecutionClock {
  /** Monotonic milliseconds. */
  abstract nowMs(): number;
}

/** Production: the process's monotonic clock. */
export class MonotonicExecutionClock extends ExecutionClock {
  nowMs(): number {
    return performance.now();
  }
}
