import { PAYOUT_ERROR_CODES } from './error-codes';
import type { TokenProvider } from '@dlock/identity';
import {
  DlockError,
  formatFencingToken,
  registerErrorCodes,
  type FenceCredential,
} from '@dlock/lock-api';
import { HOP_BUDGETS, JsonPeer, withHopRetries, type HeaderProvider } from '@dlock/http-client';
import { BodyReader } from './body-reader';
import { advisoryGet, protectedHeaders, raiseFloor } from './hops';
import type { FloorRaise, RaiseResult } from './hops';
import { assertFence } from './payout-protocol';
import { PAYOUT_STATES, type PayoutState } from './payout-types';
import { RAIL_RECEIPT_HEADER } from './rail-receipt';
import type {
  AccountList,
  AccountListItem,
  ClaimRequest,
  ClaimResponse,
  PayoutPage,
  PayoutRecord,
  PayoutStats,
  PayoutSummary,
  PostRequest,
  PostResponse,
  RailOutcomeRequest,
  RailOutcomeResponse,
  ResolveRequest,
  ResolveResponse,
} from './wire';

/** The P4 fields the executor picks its next write by. */
export type PayoutView = Pick<
  PayoutRecord,
  | 'payoutId'
  | 'accountId'
  | 'amountMinor'
  | 'currency'
  | 'beneficiaryRef'
  | 'state'
  | 'submissionId'
  | 'railReference'
>;

/** A P6 body as a writer sends it: ACKED names its submission and reference. */
export type RailOutcomeRecord =
  | { outcome: 'SUBMITTED' }
  | { outcome: 'ACKED'; submissionId: string; railReference: string; railReceipt: string }
  | { outcome: 'REJECTED'; submissionId?: string; reason?: string; railReceipt: string }
  | { outcome: 'AMBIGUOUS'; submissionId?: string; reason?: string };

/** What every fenced write answers first: the payout and its state after the write. */
export interface TransitionResult {
  payoutId: string;
  state: PayoutState;
}

/** P6 SUBMITTED's answer: the transition, and the signed instruction the rail-proxy admits. */
export interface SubmittedResult extends TransitionResult {
  railInstruction: string;
}

type FencedAnswer = ClaimResponse | RailOutcomeResponse | PostResponse | ResolveResponse;

/** P1 pages are at most this long (docs/payment-resource.md). */
const LIST_PAGE_MAX = 500;

/**
 * Typed client of payment-resource (docs/payment-resource.md, docs/contract.md). Every fenced
 * write takes the grant (`handle.fence`: a `bigint` token and its proof,
 * checked before a byte is sent) and sends it as X-Fencing-Token and
 * X-Grant-Proof with X-Owner-Id and the payout's stable X-Idempotency-Key;
 * the same `ownerId` signs the floor raises as X-Operator. Budgets and
 * retries are the hop policy's (@dlock/http-client).
 */
export class PaymentResourceClient {
  private readonly hop: JsonPeer;

  constructor(
    baseUrl: string,
    private readonly ownerId: string,
    token?: TokenProvider,
    /** Extra headers of every call: the console's X-Acting-For (docs/security.md). */
    headers?: HeaderProvider,
  ) {
    // Its answers carry the payout codes: known to whoever builds a client, app or test.
    registerErrorCodes(PAYOUT_ERROR_CODES);
    this.hop = new JsonPeer('payment-resource', baseUrl, { token, headers });
  }

  /** P1 (advisory): one page. */
  async list(
    payoutState: PayoutState,
    opts: { limit: number; accountId?: string },
    signal?: AbortSignal,
  ): Promise<PayoutSummary[]> {
    return (await this.page(payoutState, opts, signal)).items;
  }

  /** P1 (advisory) page after page, up to `max` payouts. */
  async listUpTo(
    payoutState: PayoutState,
    max: number,
    signal?: AbortSignal,
  ): Promise<PayoutSummary[]> {
    const out: PayoutSummary[] = [];
    let cursor: string | undefined;
    while (out.length < max) {
      const limit = Math.min(LIST_PAGE_MAX, max - out.length);
      const page = await this.page(payoutState, { limit, cursor }, signal);
      out.push(...page.items);
      if (page.nextCursor === undefined || page.items.length === 0) break;
      cursor = page.nextCursor;
    }
    return out;
  }

  /** P4 (advisory): the re-read after acquire when the poll's state is not enough (FR-14). */
  async get(payoutId: string, signal?: AbortSignal): Promise<PayoutRecord> {
    const path = `/v1/payouts/${encodeURIComponent(payoutId)}`;
    return this.payoutRecord(await advisoryGet<PayoutRecord>(this.hop, path, signal));
  }

  /** P2: fenced claim; `expectedState` CLAIMED is the recovery re-claim. */
  claim(
    payoutId: string,
    fence: FenceCredential,
    expectedState: ClaimRequest['expectedState'],
    signal?: AbortSignal,
  ): Promise<TransitionResult> {
    assertFence(fence);
    const body: ClaimRequest = { expectedState };
    return this.write(payoutId, 'claim', fence, body, signal);
  }

  /**
   * P6 SUBMITTED: RAIL_SUBMITTED recorded before the proxy call; the answer
   * carries the instruction the submission must present (docs/rail.md).
   */
  async markSubmitted(
    payoutId: string,
    fence: FenceCredential,
    signal?: AbortSignal,
  ): Promise<SubmittedResult> {
    assertFence(fence);
    const body: RailOutcomeRequest = { outcome: 'SUBMITTED' };
    const answer = await this.send(payoutId, 'rail-outcome', fence, body, signal);
    const r = new BodyReader(this.hop.name, answer);
    return {
      payoutId: r.str('payoutId'),
      state: r.state('state'),
      railInstruction: r.str('railInstruction'),
    };
  }

  /** P6: the payout's rail outcome, after the proxy answered (or its record told). */
  railOutcome(
    payoutId: string,
    fence: FenceCredential,
    record: Exclude<RailOutcomeRecord, { outcome: 'SUBMITTED' }>,
    signal?: AbortSignal,
  ): Promise<TransitionResult> {
    assertFence(fence);
    // The body is the contract's fields only (a caller may pass R1's whole answer); the
    // receipt travels as X-Rail-Receipt (docs/rail.md, "Receipts").
    const r = record as RailOutcomeRequest & { railReceipt?: string };
    const body: RailOutcomeRequest = { outcome: r.outcome };
    if (r.submissionId !== undefined) body.submissionId = r.submissionId;
    if (r.railReference !== undefined) body.railReference = r.railReference;
    if (r.reason !== undefined) body.reason = r.reason;
    return this.write(payoutId, 'rail-outcome', fence, body, signal, r.railReceipt);
  }

  /** P3: both ledger legs and the balance, from RAIL_ACKED to POSTED, on the ACKED receipt. */
  post(
    payoutId: string,
    fence: FenceCredential,
    ack: { submissionId: string; railReference: string; railReceipt: string },
    signal?: AbortSignal,
  ): Promise<TransitionResult> {
    assertFence(fence);
    const body: PostRequest = {
      railReference: ack.railReference,
      submissionId: ack.submissionId,
      railOutcome: 'ACKED',
    };
    return this.write(payoutId, 'post', fence, body, signal, ack.railReceipt);
  }

  /** P8: the only way out of RAIL_AMBIGUOUS, on the rail's record as the proxy receipted it (R3). */
  resolve(
    payoutId: string,
    fence: FenceCredential,
    body: ResolveRequest,
    railReceipt: string,
    signal?: AbortSignal,
  ): Promise<TransitionResult> {
    assertFence(fence);
    return this.write(payoutId, 'resolve', fence, body, signal, railReceipt);
  }

  /** GET /v1/accounts (advisory): customer accounts by id, with balance and fence. */
  async accounts(limit: number, signal?: AbortSignal): Promise<AccountList> {
    const body = await advisoryGet<AccountList>(this.hop, `/v1/accounts?limit=${limit}`, signal);
    const page = new BodyReader(this.hop.name, body);
    const accounts = page.array('accounts').map((item): AccountListItem => {
      const r = new BodyReader(this.hop.name, item);
      return {
        accountId: r.str('accountId'),
        currency: r.str('currency'),
        balanceMinor: r.int('balanceMinor'),
        fence: formatFencingToken(r.fence('fence')),
      };
    });
    return { accounts, truncated: page.bool('truncated') };
  }

  /** GET /v1/payouts/stats (advisory): by state, posted per bucket, latency percentiles. */
  async stats(windowSeconds: number, signal?: AbortSignal): Promise<PayoutStats> {
    const path = `/v1/payouts/stats?windowSeconds=${windowSeconds}`;
    const body = await advisoryGet<PayoutStats>(this.hop, path, signal);
    const r = new BodyReader(this.hop.name, body);
    const states = new BodyReader(this.hop.name, r.object('byState'));
    const latency = (field: string): PayoutStats['latencyMillis'] => {
      const l = new BodyReader(this.hop.name, r.object(field));
      return {
        p50: l.intOrNull('p50'),
        p90: l.intOrNull('p90'),
        p99: l.intOrNull('p99'),
        count: l.int('count'),
      };
    };
    return {
      windowSeconds: r.int('windowSeconds'),
      byState: Object.fromEntries(PAYOUT_STATES.map((s) => [s, states.int(s)])) as Record<
        PayoutState,
        number
      >,
      postedPerBucket: r.array('postedPerBucket').map((item) => {
        const b = new BodyReader(this.hop.name, item);
        return { at: b.str('at'), count: b.int('count') };
      }),
      bucketSeconds: r.int('bucketSeconds'),
      latencyMillis: latency('latencyMillis'),
      latencyMillisAllTime: latency('latencyMillisAllTime'),
    };
  }

  /** Raises the account's fence to a revocation's floor; an unknown account has nothing to fence. */
  async raiseFenceFloor(raise: FloorRaise, signal?: AbortSignal): Promise<RaiseResult> {
    const path = `/v1/accounts/${encodeURIComponent(raise.accountId)}/fence-floor`;
    try {
      return await raiseFloor(this.hop, path, this.ownerId, raise, signal);
    } catch (err) {
      if (err instanceof DlockError && err.code === 'NOT_FOUND') return 'not_found';
      throw err;
    }
  }

  close(): void {
    this.hop.close();
  }

  private async page(
    payoutState: PayoutState,
    opts: { limit: number; accountId?: string; cursor?: string },
    signal?: AbortSignal,
  ): Promise<{ items: PayoutSummary[]; nextCursor?: string }> {
    const query = new URLSearchParams({ state: payoutState, limit: String(opts.limit) });
    if (opts.accountId !== undefined) query.set('accountId', opts.accountId);
    if (opts.cursor !== undefined) query.set('cursor', opts.cursor);
    const body = await advisoryGet<PayoutPage>(this.hop, `/v1/payouts?${query.toString()}`, signal);
    const page = new BodyReader(this.hop.name, body);
    const nextCursor = page.strOrNull('nextCursor') ?? undefined;
    return { items: page.array('items').map((item) => this.summary(item)), nextCursor };
  }

  private summary(item: unknown): PayoutSummary {
    const r = new BodyReader(this.hop.name, item);
    return {
      payoutId: r.str('payoutId'),
      accountId: r.str('accountId'),
      amountMinor: r.int('amountMinor'),
      currency: r.str('currency'),
      beneficiaryRef: r.str('beneficiaryRef'),
      state: r.state('state'),
      attemptCount: r.int('attemptCount'),
      createdAt: r.str('createdAt'),
    };
  }

  private payoutRecord(body: unknown): PayoutRecord {
    const r = new BodyReader(this.hop.name, body);
    return {
      ...this.summary(body),
      clientRef: r.str('clientRef'),
      claimedBy: r.strOrNull('claimedBy'),
      tokenStamp: r.strOrNull('tokenStamp'),
      submissionId: r.strOrNull('submissionId'),
      railReference: r.strOrNull('railReference'),
      failureReason: r.strOrNull('failureReason'),
      claimedAt: r.strOrNull('claimedAt'),
      submittedAt: r.strOrNull('submittedAt'),
      ambiguousAt: r.strOrNull('ambiguousAt'),
      settledAt: r.strOrNull('settledAt'),
      updatedAt: r.str('updatedAt'),
    };
  }

  private async write(
    payoutId: string,
    operation: 'claim' | 'rail-outcome' | 'post' | 'resolve',
    fence: FenceCredential,
    body: ClaimRequest | RailOutcomeRequest | PostRequest | ResolveRequest,
    signal?: AbortSignal,
    railReceipt?: string,
  ): Promise<TransitionResult> {
    const answer = await this.send(payoutId, operation, fence, body, signal, railReceipt);
    const r = new BodyReader(this.hop.name, answer);
    return { payoutId: r.str('payoutId'), state: r.state('state') };
  }

  private send(
    payoutId: string,
    operation: 'claim' | 'rail-outcome' | 'post' | 'resolve',
    fence: FenceCredential,
    body: ClaimRequest | RailOutcomeRequest | PostRequest | ResolveRequest,
    signal?: AbortSignal,
    railReceipt?: string,
  ): Promise<FencedAnswer> {
    const receipt: Record<string, string> =
      railReceipt === undefined ? {} : { [RAIL_RECEIPT_HEADER]: railReceipt };
    return withHopRetries(
      'fencedWrite',
      () =>
        this.hop.call<FencedAnswer>({
          method: 'POST',
          path: `/v1/payouts/${encodeURIComponent(payoutId)}/${operation}`,
          headers: { ...protectedHeaders(fence, this.ownerId, payoutId), ...receipt },
          body,
          budget: HOP_BUDGETS.fencedWrite,
          signal,
        }),
      signal,
    );
  }
}
