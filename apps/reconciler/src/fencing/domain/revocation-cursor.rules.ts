export interface Handled {
  newTokenFloor: bigint;
  revokedAtMs: number;
  /** Both guards answered (or the key is not a payout key). */
  done: boolean;
}

/**
 * How far the cursor may move: past the longest run, in floor order, of
 * revocations that are done AND older than the settle time. Under pg a floor
 * is a nextval taken inside the revoke statement, so a lower floor can commit
 * after a higher one was read; keeping the cursor behind recent revocations
 * makes the next pass read them again (raises are idempotent).
 */
export function advanceCursor(
  cursor: bigint,
  handled: readonly Handled[],
  nowMs: number,
  settleMs: number,
): bigint {
  let next = cursor;
  for (const h of handled) {
    if (!h.done || nowMs - h.revokedAtMs < settleMs) break;
    next = h.newTokenFloor;
  }
  return next;
}
