import { Logger } from '@nestjs/common';
import { Registry } from 'prom-client';
import type { LockHandle, LockSession } from '@dlock/lock-client';
import { SafetyEvents } from '@dlock/observability';
import type { ExecutorConfig } from '../../../executor/src/config';
import { NoAttemptHooks } from '../../../executor/src/execution/domain/attempt-hooks.port';
import { submitBudgetMs } from '../../../executor/src/execution/domain/lease.rules';
import { PayoutExecutionService } from '../../../executor/src/execution/service/payout-execution.service';
import { ExecutorMetrics } from '../../../executor/src/executor.metrics';
import type { SimProcess } from './scheduler.sim';
import { RAIL_READ_TIMEOUT_MS } from './clients.sim';
import type { World } from './worker.sim';

/** prom-client's default registry takes each metric once: one per process, counters only. */
let metrics: ExecutorMetrics | undefined;

/** The real PayoutExecutionService (docs/executor.md's order, recovery by state) wired to the simulated peers. */
export function simExecutor(w: World, proc: SimProcess): PayoutExecutionService {
  Logger.overrideLogger(false);
  metrics ??= new ExecutorMetrics();
  const config = {
    OWNER_ID: proc.name,
    submitBudgetMs: submitBudgetMs(RAIL_READ_TIMEOUT_MS),
    DLOCK_HARNESS: false,
    EXECUTOR_SKIP_LIVENESS_CHECK: false,
  } as ExecutorConfig;
  const peers = w.guards.clients(proc);
  return new PayoutExecutionService(
    config,
    peers.payment,
    peers.rail,
    metrics,
    new SafetyEvents(new Registry()),
    new NoAttemptHooks(),
    proc.clock(),
  );
}

/**
 * The session the executor acquires through: every handle it is given has
 * its liveness check watched against the lock-server's own state (FR-11),
 * and, in the broken variant, trusts an expired lease.
 */
export function watchedSession(session: LockSession, w: World, proc: SimProcess): LockSession {
  const acquire = session.acquire.bind(session);
  return new Proxy(session, {
    get(target, prop, receiver) {
      if (prop !== 'acquire') return Reflect.get(target, prop, receiver) as unknown;
      return async (...args: Parameters<LockSession['acquire']>) => {
        const handle = await acquire(...args);
        watch(handle, w, proc);
        return handle;
      };
    },
  });
}

function watch(h: LockHandle, w: World, proc: SimProcess): void {
  const check = h.checkStillHeld.bind(h);
  if (w.faults.trustsExpiredLease) {
    h.leaseCovers = (budgetMs) => ({ ok: true, remainingMs: budgetMs, requiredMs: budgetMs });
  }
  h.checkStillHeld = () => {
    if (!w.faults.trustsExpiredLease) check();
    const s = w.server.state;
    const row = s.locks.get(h.key);
    if (!row || row.token !== h.fencingToken || !s.isLive(row)) {
      w.leaseViolations.push(
        `${proc.name} at ${w.sched.now} ms believed it held ${h.key} with token ` +
          `${h.fencingToken}, which the lock-server no longer held`,
      );
    }
  };
}
