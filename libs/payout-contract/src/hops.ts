import { formatFencingToken, GRANT_PROOF_HEADER, type FenceCredential } from '@dlock/lock-api';
import { HOP_BUDGETS, JsonPeer, withHopRetries } from '@dlock/http-client';
import { idempotencyKeyFor } from './payout-protocol';
import { BodyReader } from './body-reader';
import type { AccountFloorResponse, FloorRaiseRequest, HighWaterFloorResponse } from './wire';

/**
 * The headers of every protected write (docs/contract.md): the grant's token
 * and the lock-server's proof of it (docs/security.md), its owner, the payout's key.
 */
export function protectedHeaders(
  fence: FenceCredential,
  ownerId: string,
  payoutId: string,
): Record<string, string> {
  return {
    'x-fencing-token': formatFencingToken(fence.token),
    [GRANT_PROOF_HEADER]: fence.proof,
    'x-owner-id': ownerId,
    'x-idempotency-key': idempotencyKeyFor(payoutId),
  };
}

/** An advisory GET (P1, P4, R2, S2): the read budget, retried on transient failures. */
export function advisoryGet<T>(peer: JsonPeer, path: string, signal?: AbortSignal): Promise<T> {
  return withHopRetries(
    'advisoryRead',
    () => peer.call<T>({ method: 'GET', path, budget: HOP_BUDGETS.advisoryRead, signal }),
    signal,
  );
}

export interface FloorRaise {
  revocationId: string;
  accountId: string;
  floor: bigint;
  /** The lock-server's signed notice of the revocation: the guards raise nothing without it. */
  notice: string;
  reason: string;
}

/** What a guard did with a raise: moved, already past, or (payment-resource) no such account. */
export type RaiseResult = 'raised' | 'unchanged' | 'not_found';

/**
 * One guard's floor raise. A raise is idempotent (a floor already passed is a
 * no-op), so transient failures are retried like reads; a failure left over
 * is retried by the reconciler's next pass.
 */
export async function raiseFloor(
  peer: JsonPeer,
  path: string,
  operator: string,
  raise: FloorRaise,
  signal?: AbortSignal,
): Promise<'raised' | 'unchanged'> {
  const body: FloorRaiseRequest = {
    floor: formatFencingToken(raise.floor),
    notice: raise.notice,
    revocationId: raise.revocationId,
    reason: raise.reason,
  };
  const answer = await withHopRetries<AccountFloorResponse | HighWaterFloorResponse>(
    'idempotentWrite',
    () =>
      peer.call({
        method: 'POST',
        path,
        headers: { 'x-operator': operator },
        body,
        budget: HOP_BUDGETS.fencedWrite,
        signal,
      }),
    signal,
  );
  return new BodyReader(peer.name, answer).bool('raised') ? 'raised' : 'unchanged';
}
