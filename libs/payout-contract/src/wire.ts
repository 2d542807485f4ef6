import type { PayoutState, RailOutcome } from './payout-types';

/**
 * The bodies of P1–P8, R1–R2, the guards' floor raises and the rail's S2, as
 * they travel. The servers declare their answers with these types and the
 * clients read them with the same ones, so renaming or retyping a field
 * breaks the build on both sides. int64 tokens and fences travel as decimal
 * strings (`Int64Text`); amounts are safe integers; instants are ISO-8601.
 */
export type Int64Text = string;
export type Instant = string;

// payment-resource (docs/payment-resource.md, docs/contract.md)

/** One P1 item (beneficiaryRef is this project's addition: the submit needs it). */
export interface PayoutSummary {
  payoutId: string;
  accountId: string;
  amountMinor: number;
  currency: string;
  beneficiaryRef: string;
  state: PayoutState;
  attemptCount: number;
  createdAt: Instant;
}

/** P1 200. `nextCursor` is opaque and present only when more items follow. */
export interface PayoutPage {
  items: PayoutSummary[];
  nextCursor?: string;
}

/** One rail transition recorded for the payout, in P4's `submissions[]`. */
export interface PayoutRailRecord {
  submissionId: string | null;
  outcome: string;
  railReference: string | null;
  fencingToken: Int64Text | null;
  ownerId: string;
  recordedAt: Instant;
}

/** P4 200 without its `submissions[]`. Advisory: it picks the next write, never decides safety. */
export interface PayoutRecord {
  payoutId: string;
  accountId: string;
  amountMinor: number;
  currency: string;
  beneficiaryRef: string;
  clientRef: string;
  state: PayoutState;
  attemptCount: number;
  claimedBy: string | null;
  tokenStamp: Int64Text | null;
  submissionId: string | null;
  railReference: string | null;
  failureReason: string | null;
  createdAt: Instant;
  claimedAt: Instant | null;
  submittedAt: Instant | null;
  ambiguousAt: Instant | null;
  settledAt: Instant | null;
  updatedAt: Instant;
}

/** P4 — read a payout: its 200 answer (docs/payment-resource.md#endpoints). */
export interface PayoutDetail extends PayoutRecord {
  submissions: PayoutRailRecord[];
}

/** P5 200: the balance beside the ledger sum recomputed in the same snapshot (FR-25). */
export interface AccountView {
  accountId: string;
  kind: string;
  currency: string;
  balanceMinor: number;
  fence: Int64Text;
  version: number;
  updatedAt: Instant;
  ledgerSumMinor: number;
}

/** One customer account in GET /v1/accounts (the P5 fields the console shows beside the rail mark). */
export interface AccountListItem {
  accountId: string;
  currency: string;
  balanceMinor: number;
  /** "0" for an account no fenced write has touched yet. */
  fence: Int64Text;
}

/** GET /v1/accounts 200: customer accounts by id; `truncated` when more exist than `limit`. */
export interface AccountList {
  accounts: AccountListItem[];
  truncated: boolean;
}

/** GET /v1/payouts/stats 200 (docs/payment-resource.md, "Console reads"). */
export interface PayoutStats {
  windowSeconds: number;
  /** Every payout by state, each of the eight states present (0 when none). */
  byState: Record<PayoutState, number>;
  /** Payouts POSTED per bucket, oldest first, every bucket of the window present. */
  postedPerBucket: { at: Instant; count: number }[];
  bucketSeconds: number;
  /** created → POSTED of the payouts posted in the window; null percentiles when count is 0. */
  latencyMillis: { p50: number | null; p90: number | null; p99: number | null; count: number };
  /** The same over every payout ever POSTED: what the window's figures compare with. */
  latencyMillisAllTime: {
    p50: number | null;
    p90: number | null;
    p99: number | null;
    count: number;
  };
}

/** POST /v1/accounts body (docs/payment-resource.md, "Creating accounts, deposits and payouts"). */
export interface CreateAccountRequest {
  currency: string;
  accountId?: string;
}

/** POST /v1/accounts 201. */
export interface CreatedAccount {
  accountId: string;
  kind: 'CUSTOMER';
  currency: string;
  balanceMinor: number;
  fence: Int64Text;
}

/** POST /v1/accounts/{accountId}/deposits body. */
export interface DepositRequest {
  amountMinor: number;
  currency: string;
}

/** POST /v1/accounts/{accountId}/deposits 201. */
export interface DepositResponse {
  depositId: string;
  accountId: string;
  amountMinor: number;
  currency: string;
  balanceMinor: number;
}

/** POST /v1/payouts body: the system names the payout and its rail reference. */
export interface CreatePayoutRequest {
  accountId: string;
  amountMinor: number;
  currency: string;
  beneficiaryRef: string;
}

/** POST /v1/payouts 201: the payout as P4 would show it at birth. */
export type CreatedPayout = Pick<
  PayoutRecord,
  'payoutId' | 'accountId' | 'amountMinor' | 'currency' | 'beneficiaryRef' | 'clientRef'
> & { state: 'PENDING' };

/** P2 body: PENDING, or CLAIMED for the recovery re-claim. */
export interface ClaimRequest {
  expectedState: 'PENDING' | 'CLAIMED';
}

/** P2 — claim a payout: its 200 answer (docs/payment-resource.md#endpoints). */
export interface ClaimResponse {
  payoutId: string;
  state: PayoutState;
  claimToken: Int64Text;
  accountFence: Int64Text;
  attemptCount: number;
  idempotencyKey: string;
}

/** P3 body. */
export interface PostRequest {
  railReference: string;
  submissionId: string;
  railOutcome: 'ACKED';
}

/** One of P3's two balanced ledger rows. */
export interface LedgerEntryView {
  entryId: string;
  accountId: string;
  direction: 'DEBIT' | 'CREDIT';
  amountMinor: number;
  fence: Int64Text;
}

/** P3 — post to the ledger: its 200 answer (docs/payment-resource.md#endpoints). */
export interface PostResponse {
  payoutId: string;
  state: PayoutState;
  entries: LedgerEntryView[];
  balanceMinor: number;
}

export type RailOutcomeKind = 'SUBMITTED' | 'ACKED' | 'REJECTED' | 'AMBIGUOUS';

/** P6 body. */
export interface RailOutcomeRequest {
  outcome: RailOutcomeKind;
  submissionId?: string;
  railReference?: string;
  reason?: string;
}

/** What P6 and P8 answer besides their own field: the transition and the payout's rail fields. */
export interface TransitionView {
  payoutId: string;
  state: PayoutState;
  previousState: PayoutState;
  submissionId: string | null;
  railReference: string | null;
  tokenStamp: Int64Text | null;
  accountFence: Int64Text;
}

/**
 * P6 200. SUBMITTED also answers the payout instruction the rail-proxy admits
 * the submission on (docs/rail.md, "Instructions").
 */
export type RailOutcomeResponse = TransitionView & {
  outcome: RailOutcomeKind;
  railInstruction?: string;
};

/** P7 body: an operator's decision, attributed and explained. */
export interface AbandonRequest {
  operator: string;
  reason: string;
}

/** P7 — abandon a payout: its 200 answer (docs/contract.md). */
export interface AbandonResponse {
  payoutId: string;
  state: PayoutState;
  previousState: PayoutState;
  operator: string;
  reason: string;
  abandonedAt: Instant | null;
}

export type Resolution = 'ACKED' | 'NOT_FOUND';

/** P8 body: the reconciler's verdict and the rail evidence behind it. */
export interface ResolveRequest {
  resolution: Resolution;
  evidence: string;
  railReference?: string;
  submissionId?: string;
}

/** P8 — resolve an ambiguous payout: its 200 answer (docs/contract.md). */
export type ResolveResponse = TransitionView & { resolution: Resolution };

// The guards' floor raises (docs/operations.md, "Revocation fencing"); attribution in X-Operator.

/** Body of both floor raises. */
export interface FloorRaiseRequest {
  floor: Int64Text;
  /** The lock-server's revocation notice over `floor` (docs/security.md, "Revocation notices"). */
  notice?: string;
  revocationId?: string;
  reason?: string;
}

/** payment-resource POST /v1/accounts/{accountId}/fence-floor 200. */
export interface AccountFloorResponse {
  accountId: string;
  floor: Int64Text;
  fenceBefore: Int64Text;
  fenceAfter: Int64Text;
  raised: boolean;
}

/** rail-proxy POST /v1/rail/high-water/{accountId}/floor 200. */
export interface HighWaterFloorResponse {
  accountId: string;
  floor: Int64Text;
  highestTokenBefore: Int64Text | null;
  highestTokenAfter: Int64Text;
  raised: boolean;
}

// rail-proxy (docs/rail.md, docs/contract.md)

/** R1 body (POST /v1/rail/submissions); token, owner and key travel as headers. */
export interface SubmitRequest {
  payoutId: string;
  accountId: string;
  amountMinor: number;
  currency: string;
  beneficiaryRef: string;
}

/** R1 200: the rail acknowledged. */
export interface SubmitResponse {
  submissionId: string;
  payoutId: string;
  presentedToken: Int64Text;
  outcome: 'ACKED';
  railReference: string;
  submittedAt: Instant;
  resolvedAt: Instant;
  /** The proxy's signed receipt of the rail's answer: P6 ACKED and P3 carry it (docs/rail.md). */
  railReceipt: string;
}

/** One account's durable high-water mark in GET /v1/rail/high-water. */
export interface HighWaterItem {
  accountId: string;
  highWater: Int64Text;
}

/** GET /v1/rail/high-water 200: marks by account id; `truncated` when more exist than `limit`. */
export interface HighWaterList {
  accounts: HighWaterItem[];
  truncated: boolean;
}

/** One row of the proxy's record in R2; `outcome` null = unresolved (money may have moved). */
export interface SubmissionView {
  submissionId: string;
  payoutId: string;
  accountId: string;
  presentedToken: Int64Text;
  ownerId: string;
  clientRef: string;
  amountMinor: number;
  currency: string;
  outcome: RailOutcome | null;
  railReference: string | null;
  errorCode: string | null;
  submittedAt: Instant;
  resolvedAt: Instant | null;
  /** The signed receipt of an ACKED or REJECTED record (docs/rail.md, "Receipts"); else null. */
  railReceipt: string | null;
}

/** R2 200 (GET /v1/rail/submissions/{payoutId}); 404 when nothing was ever admitted. */
export interface SubmissionsResponse {
  payoutId: string;
  submissions: SubmissionView[];
}

// The rail

/** One transfer the rail booked under a client reference. */
export interface RailTransfer {
  railReference: string;
  clientRef: string;
  amountMinor: number;
  currency: string;
  acceptedAt: Instant;
  settled: boolean;
  settledAt: Instant | null;
  duplicateOf: string | null;
}

/** S2 200 (GET /lookup?clientRef=). */
export interface RailLookup {
  clientRef: string;
  asOf: Instant;
  /** The rail's own settlement window, when it reports one. */
  settlementWindowMs: number | null;
  transfers: RailTransfer[];
}

/**
 * R3 200 (GET /v1/rail/submissions/{payoutId}/evidence): the rail's record of
 * the payout as the proxy read it, and the receipt that record earns: ACKED
 * for exactly one settled transfer that is the payout's, NOT_FOUND for none,
 * null for anything a person must read (docs/rail.md, "Receipts").
 */
export interface RailEvidence {
  payoutId: string;
  lookup: RailLookup;
  railReceipt: string | null;
}
