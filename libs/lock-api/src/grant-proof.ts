import { DlockError } from './errors';
import type { FencingToken } from './fencing-token';

/**
 * A grant proof (docs/security.md, "Signed grants"): a compact JWS the
 * lock-server signs over each grant it issues, so a fencing token is
 * something a caller holds, not something it says. Fence points verify it
 * offline before their fence statement runs. Everything here is data and
 * checks; signing and verifying live in libs/identity.
 */

/** The request header a fenced write carries its grant proof in. */
export const GRANT_PROOF_HEADER = 'x-grant-proof';
/** The JWS `typ` of a grant proof: no other signed object of dlock is mistaken for one. */
export const GRANT_PROOF_TYPE = 'dlock-grant+jws';
/** A proof is about 300 bytes; anything past this is refused unparsed. */
export const PROOF_BYTES_MAX = 2048;

/** The signed claims: who holds which key under which token, in which session, since when. */
export interface GrantProofClaims {
  /** The lock key, e.g. `payout:{accountId}`. */
  key: string;
  /** The fencing token, as a decimal string (int64 on the wire, docs/contract.md). */
  tok: string;
  /** The owner: the authenticated identity that acquired the grant. */
  sub: string;
  /** The lock session the grant belongs to. */
  sid: string;
  /** When the grant was issued (seconds since the epoch); renews keep it. */
  iat: number;
}

/** What a caller presents at a fence point: the token and the proof the lock-server signed over it. */
export interface FenceCredential {
  readonly token: FencingToken;
  readonly proof: string;
}

/** Why a fence point refused a proof (`details.reason` of PROOF_REJECTED). */
export const PROOF_REFUSALS = [
  'missing',
  'malformed',
  'unknown-key',
  'signature',
  'lock-key',
  'owner',
  'token',
  'session',
  'mismatch',
] as const;
export type ProofRefusal = (typeof PROOF_REFUSALS)[number];

/**
/**
 * Which signed object was refused: a grant proof, a payout instruction, a rail
 * receipt (docs/rail.md, "Instructions" and "Receipts"), or a revocation
 * notice (docs/security.md, "Revocation notices").
 */
export type ProofKind = 'grant' | 'instruction' | 'receipt' | 'revocation';

/**
 * 403 PROOF_REJECTED: the request did not prove what it asserted; nothing was
 * done, and sending it again cannot help (docs/contract.md).
 */
export class ProofRejectedError extends DlockError {
  constructor(
    readonly proof: ProofKind,
    readonly reason: ProofRefusal,
    message: string,
    extra: Record<string, unknown> = {},
  ) {
    super('PROOF_REJECTED', message, { details: { proof, reason, ...extra } });
  }
}

const SAFE_TEXT = /^[\x21-\x7e]{1,256}$/;
const TOKEN_TEXT = /^[1-9][0-9]{0,18}$/;

/** The claims of a verified grant proof, checked for shape; a bad shape is `malformed`. */
export function grantProofClaims(payload: unknown): GrantProofClaims {
  const p = payload as Partial<Record<keyof GrantProofClaims, unknown>> | null;
  const ok =
    typeof p === 'object' &&
    p !== null &&
    typeof p.key === 'string' &&
    SAFE_TEXT.test(p.key) &&
    typeof p.tok === 'string' &&
    TOKEN_TEXT.test(p.tok) &&
    typeof p.sub === 'string' &&
    SAFE_TEXT.test(p.sub) &&
    typeof p.sid === 'string' &&
    SAFE_TEXT.test(p.sid) &&
    typeof p.iat === 'number' &&
    Number.isSafeInteger(p.iat);
  if (!ok) throw new ProofRejectedError('grant', 'malformed', 'grant proof claims are malformed');
  return { key: p.key, tok: p.tok, sub: p.sub, sid: p.sid, iat: p.iat } as GrantProofClaims;
}

/** What a fence point expects a proof to say about the request in front of it. */
export interface GrantExpectation {
  token: FencingToken;
  owner: string;
  /** The lock key this resource is guarded by (e.g. `payout:{accountId}`); omitted: checked later. */
  key?: string;
  sessionId?: string;
}

/** Refuses claims that do not describe this request: another key, owner, token or session. */
export function checkGrantClaims(claims: GrantProofClaims, expect: GrantExpectation): void {
  if (claims.tok !== expect.token.toString(10)) {
    throw new ProofRejectedError('grant', 'token', 'the grant proof is for another fencing token');
  }
  if (claims.sub !== expect.owner) {
    throw new ProofRejectedError('grant', 'owner', 'the grant proof names another owner');
  }
  if (expect.key !== undefined && claims.key !== expect.key) {
    throw new ProofRejectedError('grant', 'lock-key', 'the grant proof is for another lock key');
  }
  if (expect.sessionId !== undefined && claims.sid !== expect.sessionId) {
    throw new ProofRejectedError('grant', 'session', 'the grant proof is for another session');
  }
}
