import {
  HOP_BUDGETS,
  PeerUnavailableError,
  peerUnavailable,
  type CallBudget,
} from '@dlock/http-client';
import { DlockError, type FenceCredential } from '@dlock/lock-api';
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
import type { GuardRecords } from './checks';
import { RAIL_READ_TIMEOUT_MS, SUBMIT_BUDGET } from './executor-node';
import type { GuardClients, SimGuards } from './guards';
import { PaymentGuard, RailProxy } from './model-guard';
import type { SimPayout } from './payout-world';
import { SIM_EPOCH_MS, type SimProcess } from './scheduler';
import type { World } from './worker';

/**
 * payment-resource as the executor's client sees it, over the simulated
 * network: the real client's methods, answered by the in-memory guard
 * (model-guard.ts) with the contract's codes. Bypassed: the wire encoding
 * and the hop retry layer (withHopRetries sleeps on a real timer).
 */
class ModelPaymentResource extends PaymentResourceClient {
  constructor(
    private readonly w: World,
    private readonly m: ModelGuards,
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
    return this.exchange(() => recordOf(this.m.guard.get(payoutId)), HOP_BUDGETS.advisoryRead);
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
    event: Parameters<PaymentGuard['write']>[3],
    extra: Parameters<PaymentGuard['write']>[4] = {},
  ): Promise<TransitionResult> {
    return this.exchange(() => {
      const p = this.m.guard.write(this.w.sched.now, payoutId, fence.token, event, extra);
      this.m.states.set(payoutId, p.state);
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
class ModelRailProxy extends RailProxyClient {
  constructor(
    private readonly w: World,
    private readonly m: ModelGuards,
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
    const row = this.m.proxy.admit(w.sched.now, payout.accountId, payout.payoutId, fence.token);
    if (w.random() < w.railTimeoutRate) {
      // The rail hangs past the proxy's read timeout; it may have paid all the same.
      if (w.random() < 0.5) w.rail.pay(payout.payoutId);
      await w.sched.sleep(RAIL_READ_TIMEOUT_MS);
      row.outcome = 'TIMEOUT';
      throw new DlockError('RAIL_AMBIGUOUS', 'the rail did not answer', {
        details: { submissionId: row.submissionId, reason: 'timeout' },
      });
    }
    // A rail takes its time: most of a critical section is spent here.
    await w.sched.sleep(50 + Math.floor(w.random() * 2_000));
    w.rail.pay(payout.payoutId);
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
          this.m.proxy.records(payoutId).map((r) => ({
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
    const [row] = this.m.proxy.records(payoutId);
    const paid = (this.w.rail.paid.get(payoutId) ?? 0) > 0;
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

/**
 * The fast guards: payment-resource's and rail-proxy's admission rules as an
 * in-memory model (model-guard.ts), no SQL. `--guards pglite` runs the real
 * services instead (docs/harness.md, "Deterministic simulation").
 */
export class ModelGuards implements SimGuards {
  readonly guard: PaymentGuard;
  readonly proxy: RailProxy;
  readonly payouts: SimPayout[] = [];
  readonly states = new Map<string, PayoutState>();

  constructor(
    private readonly w: World,
    accounts: { accountId: string; balanceMinor: number }[],
    amounts: number[][],
    skipFence: boolean,
  ) {
    this.guard = new PaymentGuard({ skipFence });
    this.proxy = new RailProxy(w.rail);
    for (const [a, { accountId, balanceMinor }] of accounts.entries()) {
      this.guard.addAccount(accountId, balanceMinor);
      for (const [i, amountMinor] of amounts[a].entries()) {
        const payoutId = `00000000-0000-4000-8000-${String(a * 100 + i).padStart(12, '0')}`;
        const p = { payoutId, accountId, amountMinor, beneficiaryRef: `ben-${a}-${i}` };
        this.guard.addPayout({ ...p, state: 'PENDING', submissionId: null, railReference: null });
        this.payouts.push(p);
        this.states.set(payoutId, 'PENDING');
      }
    }
  }

  clients(proc: SimProcess): GuardClients {
    return {
      payment: new ModelPaymentResource(this.w, this, proc),
      rail: new ModelRailProxy(this.w, this, proc),
    };
  }

  records(): Promise<GuardRecords> {
    const g = this.guard;
    return Promise.resolve({ admitted: g.admitted, balances: g.balances, postings: g.postings });
  }

  statements(): number {
    return 0;
  }
}
