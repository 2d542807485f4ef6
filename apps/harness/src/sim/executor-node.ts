import { Logger } from '@nestjs/common';
import { Registry } from 'prom-client';
import {
  HOP_BUDGETS,
  PeerUnavailableError,
  peerUnavailable,
  type CallBudget,
} from '@dlock/http-client';
import { DlockError, type FenceCredential } from '@dlock/lock-api';
import type { LockHandle, LockSession } from '@dlock/lock-client';
import { SafetyEvents } from '@dlock/observability';
import {
  PaymentResourceClient,
  RailProxyClient,
  type AckedSubmission,
  type PayoutRecord,
  type PayoutState,
  type ProxyRecord,
  type RailEvidence,
  type RailOutcomeRecord,
  type SubmittedResult,
  type SubmitRequest,
  type TransitionResult,
} from '@dlock/payout-contract';
import type { ExecutorConfig } from '../../../executor/src/config';
import { NoAttemptHooks } from '../../../executor/src/execution/domain/attempt-hooks.port';
import {
  submitBudgetMs,
  submitReadTimeoutMs,
  SUBMIT_CONNECT_TIMEOUT_MS,
} from '../../../executor/src/execution/domain/lease';
import { PayoutExecutionService } from '../../../executor/src/execution/service/payout-execution.service';
import { ExecutorMetrics } from '../../../executor/src/metrics';
import { SIM_EPOCH_MS, type SimProcess } from './scheduler';
import type { World } from './worker';

/** The executor's and the proxy's RAIL_READ_TIMEOUT_MS (config.ts default). */
export const RAIL_READ_TIMEOUT_MS = 8_000;
const SUBMIT_BUDGET: CallBudget = {
  connectTimeoutMs: SUBMIT_CONNECT_TIMEOUT_MS,
  readTimeoutMs: submitReadTimeoutMs(RAIL_READ_TIMEOUT_MS),
};

/** prom-client's default registry takes each metric once: one per process, counters only. */
let metrics: ExecutorMetrics | undefined;

/**
 * payment-resource as the executor's client sees it, over the simulated
 * network: the real client's methods, answered by the in-memory guard
 * (payout-world.ts) with the contract's codes. Bypassed: the wire encoding
 * and the hop retry layer (withHopRetries sleeps on a real timer).
 */
class SimPaymentResource extends PaymentResourceClient {
  constructor(
    private readonly w: World,
    private readonly proc: SimProcess,
  ) {
    super('http://payment-resource.sim', proc.name);
  }

  private exchange<T>(fn: () => T, budget: CallBudget): Promise<T> {
    return this.w.net.call(
      this.proc,
      () => Promise.resolve(fn()),
      budget,
      (p, m) => peerUnavailable('payment-resource', p, m),
    );
  }

  override get(payoutId: string): Promise<PayoutRecord> {
    return this.exchange(() => recordOf(this.w.guard.get(payoutId)), HOP_BUDGETS.advisoryRead);
  }

  override claim(
    payoutId: string,
    fence: FenceCredential,
    expected: 'PENDING' | 'CLAIMED',
  ): Promise<TransitionResult> {
    return this.fencedWrite(payoutId, fence, 'CLAIM', { expected });
  }

  override async markSubmitted(payoutId: string, fence: FenceCredential): Promise<SubmittedResult> {
    const t = await this.fencedWrite(payoutId, fence, 'RAIL_SUBMITTED');
    return { ...t, railInstruction: `sim-instruction.${payoutId}.${fence.token}` };
  }

  override railOutcome(
    payoutId: string,
    fence: FenceCredential,
    record: Exclude<RailOutcomeRecord, { outcome: 'SUBMITTED' }>,
  ): Promise<TransitionResult> {
    if (record.outcome === 'ACKED') {
      const ack = { submissionId: record.submissionId, railReference: record.railReference };
      return this.fencedWrite(payoutId, fence, 'RAIL_ACKED', { ack });
    }
    return this.fencedWrite(
      payoutId,
      fence,
      record.outcome === 'REJECTED' ? 'RAIL_REJECTED' : 'RAIL_AMBIGUOUS',
    );
  }

  override post(payoutId: string, fence: FenceCredential): Promise<TransitionResult> {
    return this.fencedWrite(payoutId, fence, 'POST');
  }

  private fencedWrite(
    payoutId: string,
    fence: FenceCredential,
    event: Parameters<World['guard']['write']>[3],
    extra: Parameters<World['guard']['write']>[4] = {},
  ): Promise<TransitionResult> {
    return this.exchange(() => {
      const p = this.w.guard.write(this.w.sched.now, payoutId, fence.token, event, extra);
      return { payoutId, state: p.state };
    }, HOP_BUDGETS.fencedWrite);
  }
}

/**
 * rail-proxy and the rail stub behind it. The proxy records the intent, calls
 * the rail, and answers RAIL_AMBIGUOUS when the rail does not answer within
 * RAIL_READ_TIMEOUT_MS (the rail may have paid all the same). The broken
 * variant `executor-retries-rail-timeout` re-sends a submit that got no answer.
 */
class SimRailProxy extends RailProxyClient {
  constructor(
    private readonly w: World,
    private readonly proc: SimProcess,
  ) {
    super('http://rail-proxy.sim', proc.name, SUBMIT_BUDGET);
  }

  override async submit(
    fence: FenceCredential,
    _instruction: string,
    payout: SubmitRequest,
  ): Promise<AckedSubmission> {
    const tries = this.w.faults.retriesRailTimeout ? 2 : 1;
    const key = `${payout.payoutId}@${fence.token}`;
    for (let i = 0; ; i++) {
      if (this.w.submitsUnknown.has(key)) {
        this.w.resubmits.push(`${key}: presented again after a submit with no answer (FR-23)`);
      }
      try {
        return await this.w.net.call(
          this.proc,
          () => this.present(fence, payout),
          SUBMIT_BUDGET,
          (p, m) => peerUnavailable('rail-proxy', p, m),
        );
      } catch (err) {
        const noAnswer = err instanceof PeerUnavailableError && err.phase === 'response';
        if (noAnswer) this.w.submitsUnknown.add(key);
        if (!noAnswer || i + 1 >= tries) throw err;
      }
    }
  }

  /** The proxy's side of R1, at the proxy, on virtual time. */
  private async present(fence: FenceCredential, payout: SubmitRequest): Promise<AckedSubmission> {
    const w = this.w;
    const row = w.proxy.admit(w.sched.now, payout.accountId, payout.payoutId, fence.token);
    if (w.random() < w.railTimeoutRate) {
      // The rail hangs past the proxy's read timeout; it may have paid all the same.
      if (w.random() < 0.5) w.proxy.pay(payout.payoutId);
      await w.sched.sleep(RAIL_READ_TIMEOUT_MS);
      row.outcome = 'TIMEOUT';
      throw new DlockError('RAIL_AMBIGUOUS', 'the rail did not answer', {
        details: { submissionId: row.submissionId, reason: 'timeout' },
      });
    }
    // A rail takes its time: most of a critical section is spent here.
    await w.sched.sleep(50 + Math.floor(w.random() * 2_000));
    w.proxy.pay(payout.payoutId);
    Object.assign(row, {
      outcome: 'ACKED',
      railReference: `rail-${payout.payoutId}`,
      railReceipt: `receipt-${row.submissionId}`,
    });
    return {
      submissionId: row.submissionId,
      railReference: row.railReference!,
      presentedToken: fence.token,
      railReceipt: row.railReceipt!,
    };
  }

  override records(payoutId: string): Promise<ProxyRecord[]> {
    return this.w.net.call(
      this.proc,
      () =>
        Promise.resolve(
          this.w.proxy.records(payoutId).map((r) => ({
            submissionId: r.submissionId,
            outcome: r.outcome,
            railReference: r.railReference,
            presentedToken: r.token,
            railReceipt: r.railReceipt,
          })),
        ),
      HOP_BUDGETS.advisoryRead,
      (p, m) => peerUnavailable('rail-proxy', p, m),
    );
  }

  override evidence(payoutId: string): Promise<RailEvidence> {
    const [row] = this.w.proxy.records(payoutId);
    const paid = (this.w.proxy.paid.get(payoutId) ?? 0) > 0;
    const at = new Date(SIM_EPOCH_MS + this.w.sched.now).toISOString();
    return Promise.resolve({
      payoutId,
      lookup: {
        clientRef: payoutId,
        asOf: at,
        settlementWindowMs: null,
        transfers:
          paid && row?.railReference
            ? [
                {
                  railReference: row.railReference,
                  clientRef: payoutId,
                  amountMinor: 0,
                  currency: 'EUR',
                  acceptedAt: at,
                  settled: true,
                  settledAt: at,
                  duplicateOf: null,
                },
              ]
            : [],
      },
      railReceipt: paid && row?.railReceipt ? row.railReceipt : null,
    });
  }
}

function recordOf(p: {
  payoutId: string;
  accountId: string;
  amountMinor: number;
  state: PayoutState;
  submissionId: string | null;
  railReference: string | null;
}): PayoutRecord {
  return {
    ...p,
    currency: 'EUR',
    beneficiaryRef: `ben-${p.payoutId.slice(-4)}`,
    clientRef: p.payoutId,
    attemptCount: 0,
    claimedBy: null,
    tokenStamp: null,
    failureReason: null,
    createdAt: new Date(SIM_EPOCH_MS).toISOString(),
  } as PayoutRecord;
}

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
  return new PayoutExecutionService(
    config,
    new SimPaymentResource(w, proc),
    new SimRailProxy(w, proc),
    metrics,
    new SafetyEvents(new Registry()),
    new NoAttemptHooks(),
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
