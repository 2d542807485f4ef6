import type { RequestDeadline } from '@dlock/http-contract';
import type { RailOutcome, SubmitRequest } from '@dlock/payout-contract';

/** One row of rail_submission, parsed at the repository edge (tokens as bigint). */
export interface SubmissionRecord {
  submissionId: string;
  payoutId: string;
  accountId: string;
  presentedToken: bigint;
  ownerId: string;
  clientRef: string;
  amountMinor: number;
  currency: string;
  beneficiaryRef: string;
  fencingEnforced: boolean;
  /** null while the attempt is unresolved: money may have moved. */
  outcome: RailOutcome | null;
  railReference: string | null;
  errorCode: string | null;
  highestTokenSeen: bigint | null;
  createdAt: Date;
  resolvedAt: Date | null;
}

/** A validated POST /v1/rail/submissions (R1's body), with the token passed explicitly. */
export interface SubmissionRequest extends SubmitRequest {
  presentedToken: bigint;
  /** X-Grant-Proof and X-Payout-Instruction as sent: checked before anything (docs/rail.md). */
  grantProof: string | string[] | undefined;
  instruction: string | string[] | undefined;
  ownerId: string;
  idempotencyKey: string;
  /** Always `railClientRef(payoutId)`: the caller never chooses it. */
  clientRef: string;
  /** For log lines (not part of the request's identity): the route runs without the request logger context. */
  traceId: string;
  /** The caller's X-Request-Deadline-Ms, when sent (not part of the request's identity). */
  deadline?: RequestDeadline;
}

/**
 * The response a (key, token) scope produced, replayed as given
 * (docs/contract.md). A 200 names no body: it is rebuilt from the scope's resolved
 * submission, which never changes again, so the outcome is recorded in one
 * statement without knowing the database's clock first. (Rows written before
 * that change still carry their body.)
 */
export type StoredResponse =
  | { status: 200; body?: Record<string, unknown> }
  | {
      status: number;
      error: {
        code: string;
        message: string;
        details?: Record<string, unknown>;
        retryAfterMillis?: number;
      };
    };
