import { formatFencingToken, ProofRejectedError, type FencingToken } from '@dlock/lock-api';

/**
 * A rail receipt (docs/rail.md, "Receipts"): what the rail-proxy signs when it
 * records the rail's answer to a submission, or reads the rail's record of a
 * payout for the reconciler. payment-resource moves a payout on a rail outcome
 * (P6 ACKED and REJECTED, P3, P8) only on a receipt that says exactly that, so
 * the ledger follows what the rail did, never what a caller reports.
 */

/** The request header a rail outcome carries its receipt in. */
export const RAIL_RECEIPT_HEADER = 'x-rail-receipt';
/** The JWS `typ` of a receipt: never mistaken for a grant proof or an instruction. */
export const RAIL_RECEIPT_TYPE = 'dlock-rail-receipt+jws';

/**
 * What the rail said: it booked the transfer, it declined it, or (a lookup)
 * it had no transfer under the payout's client reference at `at`.
 */
export const RECEIPT_OUTCOMES = ['ACKED', 'REJECTED', 'NOT_FOUND'] as const;
export type ReceiptOutcome = (typeof RECEIPT_OUTCOMES)[number];

export interface RailReceiptClaims {
  /** payoutId (lower case) */
  pid: string;
  /** the submission the answer belongs to; null: the proxy never admitted one (NOT_FOUND only) */
  sid: string | null;
  out: ReceiptOutcome;
  /** the rail's reference of the transfer (ACKED) */
  ref: string | null;
  /** the submission's account, amount, currency, beneficiary, token and owner; null without one */
  acc: string | null;
  amt: number | null;
  cur: string | null;
  ben: string | null;
  tok: string | null;
  sub: string | null;
  /** when the rail's answer was recorded, or the rail's record read (ms since the epoch) */
  at: number;
  iat: number;
}

/** The proxy's record of a submission, as much of it as a receipt states. */
export interface ReceiptSubject {
  payoutId: string;
  submissionId: string;
  accountId: string;
  amountMinor: number;
  currency: string;
  beneficiaryRef: string;
  presentedToken: FencingToken;
  ownerId: string;
}

/**
 * The claims of a receipt. Issued at the answer's own time, so the receipt of
 * a record is the same bytes however often it is signed (Ed25519 is
 * deterministic): an idempotent replay answers exactly what it answered.
 */
export function receiptClaims(
  payoutId: string,
  submission: ReceiptSubject | null,
  answer: { out: ReceiptOutcome; ref: string | null; atMs: number },
): RailReceiptClaims {
  return {
    pid: payoutId.toLowerCase(),
    sid: submission?.submissionId.toLowerCase() ?? null,
    out: answer.out,
    ref: answer.ref,
    acc: submission?.accountId ?? null,
    amt: submission?.amountMinor ?? null,
    cur: submission?.currency ?? null,
    ben: submission?.beneficiaryRef ?? null,
    tok: submission ? formatFencingToken(submission.presentedToken) : null,
    sub: submission?.ownerId ?? null,
    at: answer.atMs,
    iat: Math.floor(answer.atMs / 1000),
  };
}

function refuse(reason: 'malformed' | 'token' | 'mismatch', message: string, field?: string) {
  return new ProofRejectedError('receipt', reason, message, field ? { field } : {});
}

const TEXTS_OR_NULL = ['sid', 'ref', 'acc', 'cur', 'ben', 'tok', 'sub'] as const;
const TOKEN_TEXT = /^[1-9][0-9]{0,18}$/;

/** The claims of a verified receipt, checked for shape. */
export function parseReceiptClaims(payload: unknown): RailReceiptClaims {
  const p = payload as Record<string, unknown> | null;
  const ok =
    typeof p === 'object' &&
    p !== null &&
    typeof p.pid === 'string' &&
    (RECEIPT_OUTCOMES as readonly unknown[]).includes(p.out) &&
    TEXTS_OR_NULL.every((k) => p[k] === null || typeof p[k] === 'string') &&
    (p.tok === null || TOKEN_TEXT.test(p.tok as string)) &&
    (p.amt === null || Number.isSafeInteger(p.amt)) &&
    Number.isSafeInteger(p.at) &&
    Number.isSafeInteger(p.iat);
  if (!ok) throw refuse('malformed', 'rail receipt claims are malformed');
  return p as unknown as RailReceiptClaims;
}

/** What the request in front of payment-resource says the rail answered. */
export interface ReceiptExpectation {
  payoutId: string;
  outcome: ReceiptOutcome;
  /** The submission the request names; undefined: it names none (the receipt's then stands). */
  submissionId?: string;
  /** The rail reference the request records; checked for ACKED. */
  railReference?: string;
  /** The token of the request: a receipt of a newer holder's submission is not this caller's. */
  token: FencingToken;
}

/** Refuses a receipt that does not state what the request records (the first differing field). */
export function checkReceipt(claims: RailReceiptClaims, expect: ReceiptExpectation): void {
  const fields: [string, unknown, unknown][] = [
    ['payoutId', claims.pid, expect.payoutId.toLowerCase()],
    ['outcome', claims.out, expect.outcome],
  ];
  if (expect.submissionId !== undefined) {
    fields.push(['submissionId', claims.sid, expect.submissionId.toLowerCase()]);
  }
  if (claims.out === 'ACKED')
    fields.push(['railReference', claims.ref, expect.railReference ?? null]);
  for (const [field, stated, asked] of fields) {
    if (stated !== asked) {
      throw refuse('mismatch', `${field} differs from what the rail-proxy recorded`, field);
    }
  }
  if (claims.tok !== null && BigInt(claims.tok) > expect.token) {
    throw refuse('token', 'the rail receipt is of a submission under a newer token');
  }
}

/** The payout as payment-resource holds it: what a receipt's submission must match. */
export interface ReceiptPayout {
  accountId: string;
  amountMinor: number;
  currency: string;
  beneficiaryRef: string;
  /** When the payout was quarantined: a NOT_FOUND read before it proves nothing. */
  ambiguousAt: Date | null;
}

/** The first field where the receipt's submission is not this payout, or null. */
export function receiptMismatch(
  claims: RailReceiptClaims,
  payout: ReceiptPayout,
): ProofRejectedError | null {
  const fields: [string, unknown, unknown][] = [
    ['accountId', claims.acc, payout.accountId],
    ['amountMinor', claims.amt, payout.amountMinor],
    ['currency', claims.cur, payout.currency],
    ['beneficiaryRef', claims.ben, payout.beneficiaryRef],
  ];
  for (const [field, stated, recorded] of fields) {
    // A lookup of a payout the proxy never admitted states no submission (NOT_FOUND only).
    if (stated !== null && stated !== recorded) {
      return refuse('mismatch', `${field} differs from the payout`, field);
    }
  }
  if (
    claims.out === 'NOT_FOUND' &&
    (payout.ambiguousAt === null || claims.at < +payout.ambiguousAt)
  ) {
    return refuse('mismatch', 'the rail was read before the payout was quarantined', 'at');
  }
  return null;
}
