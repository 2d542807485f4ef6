import { ProofVerifier } from '@dlock/identity';
import { GRANT_PROOF_TYPE, ProofRejectedError } from '@dlock/lock-api';
import { simGrantJwks } from './lock-server-node.sim';
import { SIM_EPOCH_MS } from './scheduler.sim';

/**
 * The guards' verifier of the lock-server's grant proofs: the real one
 * (signature, key id, type), its key reloads and memory on virtual time.
 */
export function simGrantVerifier(nowMs: () => number, rememberMs?: number): ProofVerifier {
  return new ProofVerifier({
    jwks: simGrantJwks,
    type: GRANT_PROOF_TYPE,
    kind: 'grant',
    name: 'grant proof',
    rememberMs,
    now: () => SIM_EPOCH_MS + nowMs(),
  });
}

/**
 * The payout services' own proofs (instructions, receipts) are not signed in
 * the simulation: a proof is an unsigned compact JWS (simProof) whose claims
 * are its payload, and every check of those claims runs.
 */
export function decodeSimProof(proof: string | string[] | undefined): unknown {
  const parts = typeof proof === 'string' ? proof.split('.') : [];
  if (parts.length !== 3) throw new ProofRejectedError('receipt', 'malformed', 'not a compact JWS');
  return JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as unknown;
}

/** An unsigned compact JWS of `claims` (decodeSimProof reads it back). */
export function simProof(type: string, claims: object): string {
  const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
  return `${b64({ alg: 'none', typ: type })}.${b64(claims)}.sim`;
}
