import { formatFencingToken, ProofRejectedError, type FencingToken } from '@dlock/lock-api';
import type { SubmitRequest } from './wire';

/**
 * A payout instruction (docs/rail.md, "Instructions"): what payment-resource
 * signs when it records RAIL_SUBMITTED under a grant — the payout, its
 * account, amount, currency and beneficiary, the token and the owner. The
 * rail-proxy admits a submission only when it matches one field for field,
 * so the rail pays what payment-resource recorded, not what a caller says.
 */

/** The request header a submission carries its instruction in. */
export const PAYOUT_INSTRUCTION_HEADER = 'x-payout-instruction';
/** The JWS `typ` of an instruction: never mistaken for a grant proof. */
export const PAYOUT_INSTRUCTION_TYPE = 'dlock-payout-instruction+jws';

export interface PayoutInstructionClaims {
  /** payoutId */
  pid: string;
  /** accountId */
  acc: string;
  /** amountMinor */
  amt: number;
  /** currency */
  cur: string;
  /** beneficiaryRef */
  ben: string;
  /** the fencing token the payout was marked RAIL_SUBMITTED under (decimal string) */
  tok: string;
  /** the owner of that grant */
  sub: string;
  iat: number;
}

export function instructionClaims(
  payout: SubmitRequest,
  token: FencingToken,
  owner: string,
  nowMs: number,
): PayoutInstructionClaims {
  return {
    pid: payout.payoutId.toLowerCase(),
    acc: payout.accountId,
    amt: payout.amountMinor,
    cur: payout.currency,
    ben: payout.beneficiaryRef,
    tok: formatFencingToken(token),
    sub: owner,
    iat: Math.floor(nowMs / 1000),
  };
}

function refuse(
  reason: 'malformed' | 'token' | 'owner' | 'mismatch',
  message: string,
  field?: string,
) {
  return new ProofRejectedError('instruction', reason, message, field ? { field } : {});
}

/** The claims of a verified instruction, checked for shape. */
export function parseInstructionClaims(payload: unknown): PayoutInstructionClaims {
  const p = payload as Record<string, unknown> | null;
  const texts = ['pid', 'acc', 'cur', 'ben', 'tok', 'sub'];
  const ok =
    typeof p === 'object' &&
    p !== null &&
    texts.every((k) => typeof p[k] === 'string') &&
    Number.isSafeInteger(p.amt) &&
    Number.isSafeInteger(p.iat);
  if (!ok) throw refuse('malformed', 'payout instruction claims are malformed');
  return p as unknown as PayoutInstructionClaims;
}

/**
 * Refuses a submission that is not the instructed one: another token or
 * owner, or any payout field changed (the first differing field is named).
 */
export function checkInstruction(
  claims: PayoutInstructionClaims,
  submission: SubmitRequest,
  token: FencingToken,
  owner: string,
): void {
  if (claims.tok !== formatFencingToken(token)) {
    throw refuse('token', 'the payout instruction was issued under another fencing token');
  }
  if (claims.sub !== owner) throw refuse('owner', 'the payout instruction names another owner');
  const fields: [string, unknown, unknown][] = [
    ['payoutId', claims.pid, submission.payoutId.toLowerCase()],
    ['accountId', claims.acc, submission.accountId],
    ['amountMinor', claims.amt, submission.amountMinor],
    ['currency', claims.cur, submission.currency],
    ['beneficiaryRef', claims.ben, submission.beneficiaryRef],
  ];
  for (const [field, instructed, asked] of fields) {
    if (instructed !== asked) {
      throw refuse('mismatch', `${field} differs from what payment-resource recorded`, field);
    }
  }
}
