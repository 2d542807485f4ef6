import { Logger } from '@nestjs/common';
import { Registry } from 'prom-client';
import {
  HOP_BUDGETS,
  PeerUnavailableError,
  peerUnavailable,
  type CallBudget,
} from '@dlock/http-client';
import type { FenceCredential } from '@dlock/lock-api';
import type { LockHandle, LockSession } from '@dlock/lock-client';
import { SafetyEvents } from '@dlock/observability';
import {
  idempotencyKeyFor,
  PaymentResourceClient,
  RailProxyClient,
  railClientRef,
  type RailOutcomeRequest,
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
import type { SubmissionRecord } from '../../../rail-proxy/src/submission/domain/submission.types';
import { simReceiptOf, type SimRail } from './proxy-node';
import { SIM_EPOCH_MS, type SimProcess } from './scheduler';
import type { PgliteGuards } from './guards';
import type { World } from './worker';

/** The executor's and the proxy's RAIL_READ_TIMEOUT_MS (config.ts default). */
export const RAIL_READ_TIMEOUT_MS = 8_000;
export const SUBMIT_BUDGET: CallBudget = {
  connectTimeoutMs: SUBMIT_CONNECT_TIMEOUT_MS,
  readTimeoutMs: submitReadTimeoutMs(RAIL_READ_TIMEOUT_MS),
};

/** prom-client's default registry takes each metric once: one per process, counters only. */
let metrics: ExecutorMetrics | undefined;

/**
 * payment-resource as the executor's client sees it, over the simulated
 * network: the real client's methods, answered by the real service
 * (payment-node.ts: PayoutCommands on paydb's SQL in PGlite) with the
 * headers the real client sends. Bypassed: the wire encoding and the hop
 * retry layer (withHopRetries sleeps on a real timer).
 */
export class PglitePaymentResource extends PaymentResourceClient {
  constructor(
    private readonly w: World,
    private readonly g: PgliteGuards,
    private readonly proc: SimProcess,
  ) {
    super('http://payment-resource.sim', proc.name);
  }

  private exchange<T>(fn: () => Promise<T>, budget: CallBudget): Promise<T> {
    return this.w.net.call(
      this.proc,
      async () => {
        try {
          return await fn();
        } finally {
          await this.g.payment.refresh();
        }
      },
      budget,
      (p, m) => peerUnavailable('payment-resource', p, m),
    );
  }

  private grant(payoutId: string, fence: FenceCredential) {
    const key = idempotencyKeyFor(payoutId);
    return this.g.payment.grant(payoutId, fence, this.proc.name, key);
  }

  override get(payoutId: string): Promise<PayoutRecord> {
    return this.exchange(
      async () => (await this.g.payment.queries.get(payoutId)) as PayoutRecord,
      HOP_BUDGETS.advisoryRead,
    );
  }

  override claim(
    payoutId: string,
    fence: FenceCredential,
    expectedState: 'PENDING' | 'CLAIMED',
  ): Promise<TransitionResult> {
    return this.exchange(
      () => this.g.payment.commands.claim(payoutId, this.grant(payoutId, fence), { expectedState }),
      HOP_BUDGETS.fencedWrite,
    ).then(transitionOf);
  }

  override markSubmitted(payoutId: string, fence: FenceCredential): Promise<SubmittedResult> {
    return this.exchange(
      () =>
        this.g.payment.commands.railOutcome(
          payoutId,
          this.grant(payoutId, fence),
          { outcome: 'SUBMITTED' },
          undefined,
        ),
      HOP_BUDGETS.fencedWrite,
    ).then((r) => ({ ...transitionOf(r), railInstruction: r.railInstruction! }));
  }

  override railOutcome(
    payoutId: string,
    fence: FenceCredential,
    record: Exclude<RailOutcomeRecord, { outcome: 'SUBMITTED' }>,
  ): Promise<TransitionResult> {
    // The body is the contract's fields only; the receipt travels beside it (as the real client does).
    const r = record as RailOutcomeRequest & { railReceipt?: string };
    const body: RailOutcomeRequest = { outcome: r.outcome };
    if (r.submissionId !== undefined) body.submissionId = r.submissionId;
    if (r.railReference !== undefined) body.railReference = r.railReference;
    if (r.reason !== undefined) body.reason = r.reason;
    return this.exchange(
      () =>
        this.g.payment.commands.railOutcome(
          payoutId,
          this.grant(payoutId, fence),
          body,
          r.railReceipt,
        ),
      HOP_BUDGETS.fencedWrite,
    ).then(transitionOf);
  }

  override post(
    payoutId: string,
    fence: FenceCredential,
    ack: { submissionId: string; railReference: string; railReceipt: string },
  ): Promise<TransitionResult> {
    const body = { railReference: ack.railReference, submissionId: ack.submissionId } as const;
    return this.exchange(
      () =>
        this.g.payment.commands.post(
          payoutId,
          this.grant(payoutId, fence),
          { ...body, railOutcome: 'ACKED' },
          ack.railReceipt,
        ),
      HOP_BUDGETS.fencedWrite,
    ).then(transitionOf);
  }
}

function transitionOf(r: { payoutId: string; state: PayoutState }): TransitionResult {
  return { payoutId: r.payoutId, state: r.state };
}

/**
 * rail-proxy, answered by the real service (proxy-node.ts: SubmissionService
 * on proxydb's SQL in PGlite), and the rail stub behind it (simRail). The
 * broken variant `executor-retries-rail-timeout` re-sends a submit that got
 * no answer.
 */
export class PgliteRailProxy extends RailProxyClient {
  constructor(
    private readonly w: World,
    private readonly g: PgliteGuards,
    private readonly proc: SimProcess,
  ) {
    super('http://rail-proxy.sim', proc.name, SUBMIT_BUDGET);
  }

  override async submit(
    fence: FenceCredential,
    instruction: string,
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
          () => this.present(fence, instruction, payout),
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

  /**
   * R1 at the proxy, as its controller passes it on. A duplicate of a request
   * still in flight waits for it (the service's own wait polls a wall-clock
   * timer), then gets the stored answer.
   */
  private async present(
    fence: FenceCredential,
    instruction: string,
    payout: SubmitRequest,
  ): Promise<AckedSubmission> {
    const idempotencyKey = idempotencyKeyFor(payout.payoutId);
    const scope = `${idempotencyKey}@${fence.token}`;
    const earlier = this.g.inFlight.get(scope);
    if (earlier) await earlier.catch(() => undefined);
    const answer = this.g.proxy.service.submit({
      ...payout,
      presentedToken: fence.token,
      grantProof: fence.proof,
      instruction,
      ownerId: this.proc.name,
      idempotencyKey,
      clientRef: railClientRef(payout.payoutId),
      traceId: payout.payoutId,
    });
    this.g.inFlight.set(scope, answer);
    const r = await answer;
    return {
      submissionId: r.submissionId,
      railReference: r.railReference,
      presentedToken: BigInt(r.presentedToken),
      railReceipt: r.railReceipt,
    };
  }

  override records(payoutId: string): Promise<ProxyRecord[]> {
    return this.w.net.call(
      this.proc,
      async () => (await this.g.proxy.service.recordsOf(payoutId)).map(proxyRecordOf),
      HOP_BUDGETS.advisoryRead,
      (p, m) => peerUnavailable('rail-proxy', p, m),
    );
  }

  override async evidence(payoutId: string): Promise<RailEvidence> {
    const acked = (await this.g.proxy.service.recordsOf(payoutId)).find(
      (r) => r.railReference !== null,
    );
    const paid = (this.w.rail.paid.get(payoutId) ?? 0) > 0;
    const at = new Date(SIM_EPOCH_MS + this.w.sched.now).toISOString();
    const record = acked ? proxyRecordOf(acked) : null;
    return {
      payoutId,
      lookup: {
        clientRef: payoutId,
        asOf: at,
        settlementWindowMs: null,
        transfers:
          paid && record?.railReference
            ? [
                {
                  railReference: record.railReference,
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
      railReceipt: paid && record?.railReceipt ? record.railReceipt : null,
    };
  }
}

function proxyRecordOf(r: SubmissionRecord): ProxyRecord {
  return {
    submissionId: r.submissionId,
    outcome: r.outcome,
    railReference: r.railReference,
    presentedToken: r.presentedToken,
    railReceipt: simReceiptOf(r),
  };
}

/**
 * The rail stub on virtual time: it may hang past the proxy's read timeout
 * (and may have paid all the same), else it pays and acknowledges after a
 * while. What it was shown, and under which token, goes to the rail's journal.
 */
export function simRail(w: World, g: PgliteGuards): SimRail {
  return async (transfer) => {
    const payoutId = transfer.clientRef.replace(/^po-/, '');
    const live = (await g.proxy.service.recordsOf(payoutId)).find((r) => r.outcome === null);
    w.rail.presentations.push({
      at: w.sched.now,
      accountId: live!.accountId,
      payoutId,
      token: live!.presentedToken,
    });
    if (w.random() < w.railTimeoutRate) {
      if (w.random() < 0.5) w.rail.pay(payoutId);
      await w.sched.sleep(RAIL_READ_TIMEOUT_MS);
      return { kind: 'ambiguous', reason: 'read-timeout' } as const;
    }
    // A rail takes its time: most of a critical section is spent here.
    await w.sched.sleep(50 + Math.floor(w.random() * 2_000));
    w.rail.pay(payoutId);
    return { kind: 'acked', railReference: `rail-${payoutId}` } as const;
  };
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
  const peers = w.guards.clients(proc);
  return new PayoutExecutionService(
    config,
    peers.payment,
    peers.rail,
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
