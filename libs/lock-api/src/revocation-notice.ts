import { FENCING_TOKEN_MAX } from './fencing-token';
import { ProofRejectedError } from './grant-proof';
import { UUID_PATTERN } from './uuid';

/**
 * A revocation notice (docs/security.md, "Revocation notices"): a compact JWS
 * the lock-server signs, with its grant key ring, over the token floor one of
 * its revocations computed. A fence point raises its memory of a key to a
 * floor only on such a notice, so no floor is taken on a caller's word: the
 * floor is one the lock service's own token sequence produced, after the
 * revoke its policy allowed. The claims speak of a lock key and nothing else,
 * so any fence point guarded by a key can check them.
 */

/** The JWS `typ` of a revocation notice: never mistaken for a grant proof or an instruction. */
export const REVOCATION_NOTICE_TYPE = 'dlock-revocation+jws';

/** The signed claims: which key's holder was revoked, the floor after it, and who did it. */
export interface RevocationNoticeClaims {
  /** The lock key revoked. */
  key: string;
  /** The key's new token floor, as a decimal string: every later grant's token exceeds it. */
  floor: string;
  /** The revocation's id in the lock-server's audit record. */
  rid: string;
  /** The operator who asked for the revoke. */
  req: string;
  /**
   * The operator who approved it: a second operator under a two-person policy,
   * the requester under a one-person one; null on a notice re-issued from the
   * record (the record keeps the requester; the approval is in its request).
   */
  apr: string | null;
  /** When the notice was signed (seconds since the epoch). */
  iat: number;
}

const SAFE_TEXT = /^[\x21-\x7e]{1,256}$/;
/** Subjects: printable ASCII (docs/security.md, "Identities"). */
const SUBJECT_TEXT = /^[\x20-\x7e]{1,256}$/;
const FLOOR_TEXT = /^[1-9][0-9]{0,18}$/;

/** The claims of a verified notice, checked for shape; a bad shape is `malformed`. */
export function revocationNoticeClaims(payload: unknown): RevocationNoticeClaims {
  const p = payload as Partial<Record<keyof RevocationNoticeClaims, unknown>> | null;
  const text = (v: unknown): v is string => typeof v === 'string' && SAFE_TEXT.test(v);
  const subject = (v: unknown): v is string => typeof v === 'string' && SUBJECT_TEXT.test(v);
  const ok =
    typeof p === 'object' &&
    p !== null &&
    text(p.key) &&
    typeof p.floor === 'string' &&
    FLOOR_TEXT.test(p.floor) &&
    BigInt(p.floor) <= FENCING_TOKEN_MAX &&
    typeof p.rid === 'string' &&
    UUID_PATTERN.test(p.rid) &&
    subject(p.req) &&
    (p.apr === null || subject(p.apr)) &&
    typeof p.iat === 'number' &&
    Number.isSafeInteger(p.iat);
  if (!ok) {
    throw new ProofRejectedError(
      'revocation',
      'malformed',
      'revocation notice claims are malformed',
    );
  }
  return {
    key: p.key,
    floor: p.floor,
    rid: p.rid,
    req: p.req,
    apr: p.apr,
    iat: p.iat,
  } as RevocationNoticeClaims;
}

/** What a fence point expects a notice to say about the raise in front of it. */
export interface NoticeExpectation {
  /** The lock key guarding the resource whose memory is raised. */
  key: string;
  /** The floor the request asks for (the notice's own when the request names none). */
  floor?: bigint;
  revocationId?: string;
}

/** Refuses a notice that does not describe this raise: another key, floor or revocation. */
export function checkRevocationNotice(
  claims: RevocationNoticeClaims,
  expect: NoticeExpectation,
): bigint {
  if (claims.key !== expect.key) {
    throw new ProofRejectedError(
      'revocation',
      'lock-key',
      'the revocation notice is for another lock key',
    );
  }
  const floor = BigInt(claims.floor);
  if (expect.floor !== undefined && expect.floor !== floor) {
    throw new ProofRejectedError(
      'revocation',
      'mismatch',
      'the revocation notice is for another floor',
      {
        noticeFloor: claims.floor,
      },
    );
  }
  if (expect.revocationId !== undefined && expect.revocationId !== claims.rid) {
    throw new ProofRejectedError(
      'revocation',
      'mismatch',
      'the revocation notice is for another revocation',
    );
  }
  return floor;
}
