import { ProofRejectedError } from '@dlock/lock-api';

/**
 * The simulation checks what a proof says, not who signed it: a signature's
 * check runs on the wall clock (key reloads, expiry), which a replay must not
 * read. A proof is a compact JWS, the lock-server's real one or the
 * simulated rail-proxy's unsigned one (simProof); its claims are its payload.
 */
export function decodeSimProof(proof: string | string[] | undefined): unknown {
  const parts = typeof proof === 'string' ? proof.split('.') : [];
  if (parts.length !== 3) throw new ProofRejectedError('grant', 'malformed', 'not a compact JWS');
  return JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as unknown;
}

/** An unsigned compact JWS of `claims` (decodeSimProof reads it back). */
export function simProof(type: string, claims: object): string {
  const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${b64({ alg: 'none', typ: type })}.${b64(claims)}.sim`;
}
