import { DlockError, FencedOutError } from '@dlock/lock-api';
import type { PayoutState } from '@dlock/payout-contract';
import { transition, type PayoutEvent } from '@dlock/payout-contract';
import type { AdmittedWrite } from './payment-node.sim';
import type { RailJournal } from './payout-world.model';

/** One payout in the model (paydb's payout row, the fields the rules read). */
export interface ModelPayout {
  payoutId: string;
  accountId: string;
  amountMinor: number;
  state: PayoutState;
  submissionId: string | null;
  railReference: string | null;
}

export interface GuardOptions {
  /** Negative control: payment-resource admits every token (its fence predicate dropped). */
  skipFence?: boolean;
}

/**
 * payment-resource's admission rule, in memory. The rule itself lives in SQL
 * (FenceRepository.advance, ADMITS in fence.repository.ts): the account's fence
 * admits a strictly newer token, or the same token continuing the payout its
 * grant opened; an admitted write moves the fence to the token. Modelled here
 * statement for statement; the transition is the real table's
 * (transition-table.ts). Each write is one atomic step, as its transaction is.
 */
export class PaymentGuard {
  readonly payouts = new Map<string, ModelPayout>();
  readonly fences = new Map<string, { token: bigint; payoutId: string | null }>();
  readonly balances = new Map<string, number>();
  readonly admitted: AdmittedWrite[] = [];
  readonly postings = new Map<string, number>();

  constructor(private readonly options: GuardOptions = {}) {}

  addAccount(accountId: string, balanceMinor: number): void {
    this.fences.set(accountId, { token: 0n, payoutId: null });
    this.balances.set(accountId, balanceMinor);
  }

  addPayout(p: ModelPayout): void {
    this.payouts.set(p.payoutId, { ...p });
  }

  get(payoutId: string): ModelPayout {
    const p = this.payouts.get(payoutId);
    if (!p) throw new DlockError('NOT_FOUND', 'no such payout');
    return { ...p };
  }

  /**
   * P2/P6/P3: the fence advance, then the transition, atomically; a refused
   * write changes nothing (its transaction rolls back). `expected` is P2's
   * expectedState; `ack` the submission an ACKED outcome names.
   */
  write(
    at: number,
    payoutId: string,
    token: bigint,
    event: PayoutEvent,
    extra: { expected?: PayoutState; ack?: { submissionId: string; railReference: string } } = {},
  ): ModelPayout {
    const p = this.payouts.get(payoutId);
    if (!p) throw new DlockError('NOT_FOUND', 'no such payout');
    const fence = this.fences.get(p.accountId)!;
    // A claim never continues anything (FenceRequest.continuation).
    const continuation = event !== 'CLAIM';
    const admits =
      fence.token < token || (continuation && fence.token === token && fence.payoutId === payoutId);
    if (!admits && !this.options.skipFence) {
      throw new FencedOutError('a newer token was accepted on this account', {
        details: { presentedToken: token.toString(), highestToken: fence.token.toString() },
      });
    }
    if (extra.expected !== undefined && p.state !== extra.expected) {
      throw new DlockError('PAYOUT_NOT_CLAIMABLE', `the payout is ${p.state}`, {
        details: { state: p.state },
      });
    }
    const t = transition(p.state, event);
    if (!t.allowed) {
      throw new DlockError('PAYOUT_NOT_CLAIMABLE', `${event} is not allowed from ${p.state}`, {
        details: { state: p.state },
      });
    }
    if (token > fence.token) this.fences.set(p.accountId, { token, payoutId });
    this.admitted.push({
      at,
      accountId: p.accountId,
      payoutId,
      token,
      event,
      from: p.state,
      to: t.to,
    });
    p.state = t.to;
    if (extra.ack) Object.assign(p, extra.ack);
    if (event === 'POST') {
      this.balances.set(p.accountId, this.balances.get(p.accountId)! - p.amountMinor);
      this.postings.set(payoutId, (this.postings.get(payoutId) ?? 0) + 1);
    }
    return { ...p };
  }
}

/** One submission rail-proxy recorded (proxydb's rail_submission row, the fields R2 shows). */
export interface SubmissionRow {
  submissionId: string;
  payoutId: string;
  token: bigint;
  /** null: presented, no answer from the rail yet. */
  outcome: 'ACKED' | 'TIMEOUT' | null;
  railReference: string | null;
  railReceipt: string | null;
}

/**
 * rail-proxy's admission, in memory (the rule is SQL: admissionSql in
 * submission.repository.ts): the account's high-water mark admits only a
 * token above it and rises to it, and a payout has at most one live
 * submission (the partial unique index). The intent is recorded before the
 * rail is called; the rail's answer (or its timeout) resolves it.
 */
export class RailProxy {
  readonly highWater = new Map<string, bigint>();
  readonly submissions = new Map<string, SubmissionRow>();

  constructor(private readonly rail: RailJournal) {}

  /** R1's admission: the recorded intent, or FENCED_OUT / DUPLICATE_SUBMISSION with nothing presented. */
  admit(at: number, accountId: string, payoutId: string, token: bigint): SubmissionRow {
    const mark = this.highWater.get(accountId) ?? 0n;
    if (mark >= token) {
      throw new FencedOutError('a newer token was presented for this account', {
        details: { resourceType: 'rail', presentedToken: `${token}`, highestToken: `${mark}` },
      });
    }
    this.highWater.set(accountId, token);
    if (this.submissions.has(payoutId)) {
      throw new DlockError('DUPLICATE_SUBMISSION', 'this payout was already submitted', {
        details: { submissionId: this.submissions.get(payoutId)!.submissionId },
      });
    }
    const row: SubmissionRow = {
      submissionId: `sub-${payoutId}`,
      payoutId,
      token,
      outcome: null,
      railReference: null,
      railReceipt: null,
    };
    this.submissions.set(payoutId, row);
    this.rail.presentations.push({ at, accountId, payoutId, token });
    return row;
  }

  records(payoutId: string): SubmissionRow[] {
    const row = this.submissions.get(payoutId);
    return row ? [{ ...row }] : [];
  }
}
