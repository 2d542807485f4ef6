import { DlockError, type FenceCredential } from '@dlock/lock-api';
import type {
  AckedSubmission,
  PayoutRecord,
  PayoutState,
  ProxyRecord,
  RailOutcomeRecord,
  SubmittedResult,
  SubmitRequest,
  TransitionResult,
} from '@dlock/payout-contract';
import type { GuardRecords } from './sim.checker';
import type { GuardClients, SimGuards } from './guards.sim';
import { PaymentGuard, RailProxy, type ModelPayout } from './payment-guard.model';
import type { SimPayout } from './payout-world.model';
import { SIM_EPOCH_MS, type SimProcess } from './scheduler.sim';
import { railAnswer, SimPaymentResource, SimRailProxy } from './clients.sim';
import type { World } from './worker.sim';

/** payment-resource's client (clients.sim.ts), answered by the in-memory guard (payment-guard.model.ts) with the contract's codes. */
class ModelPaymentResource extends SimPaymentResource {
  constructor(
    w: World,
    private readonly m: ModelGuards,
    proc: SimProcess,
  ) {
    super(w, proc);
  }

  override get(payoutId: string): Promise<PayoutRecord> {
    return this.exchange('advisoryRead', () =>
      Promise.resolve(recordOf(this.m.guard.get(payoutId))),
    );
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
    return this.exchange('fencedWrite', () => {
      const p = this.m.guard.write(this.w.sched.now, payoutId, fence.token, event, extra);
      this.m.states.set(payoutId, p.state);
      return Promise.resolve({ payoutId, state: p.state });
    });
  }
}

/**
 * rail-proxy's side (clients.sim.ts) in memory: the proxy records the intent,
 * calls the rail, and answers RAIL_AMBIGUOUS when the rail does not answer
 * within its read timeout (the rail may have paid all the same).
 */
class ModelRailProxy extends SimRailProxy {
  constructor(
    w: World,
    private readonly m: ModelGuards,
    proc: SimProcess,
  ) {
    super(w, proc);
  }

  protected async present(
    fence: FenceCredential,
    _instruction: string,
    payout: SubmitRequest,
  ): Promise<AckedSubmission> {
    const w = this.w;
    const row = this.m.proxy.admit(w.sched.now, payout.accountId, payout.payoutId, fence.token);
    if ((await railAnswer(w, payout.payoutId)) === 'ambiguous') {
      row.outcome = 'TIMEOUT';
      throw new DlockError('RAIL_AMBIGUOUS', 'the rail did not answer', {
        details: { submissionId: row.submissionId, reason: 'timeout' },
      });
    }
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

  protected proxyRecords(payoutId: string): Promise<ProxyRecord[]> {
    return Promise.resolve(
      this.m.proxy.records(payoutId).map((r) => ({
        submissionId: r.submissionId,
        outcome: r.outcome,
        railReference: r.railReference,
        presentedToken: r.token,
        railReceipt: r.railReceipt,
      })),
    );
  }
}

function recordOf(p: ModelPayout): PayoutRecord {
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
 * in-memory model (payment-guard.model.ts), no SQL. `--guards pglite` runs the real
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

  close(): Promise<void> {
    return Promise.resolve();
  }
}
