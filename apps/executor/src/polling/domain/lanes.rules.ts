import { setMaxListeners } from 'node:events';
import type { PayoutSummary } from '@dlock/payout-contract';

/**
 * Groups a poll's payouts into one lane per account, in the order given and
 * without repeats. Lanes run concurrently; payouts inside a lane run one
 * after another, so a worker never holds two payouts of one account at once.
 * `leftAlone` drops payouts this process must not retry (refused as invalid,
 * docs/executor.md § Invalid payouts).
 */
export function lanesByAccount(
  payouts: readonly PayoutSummary[],
  busyAccounts: ReadonlySet<string>,
  leftAlone: (payoutId: string) => boolean = () => false,
): PayoutSummary[][] {
  const lanes = new Map<string, PayoutSummary[]>();
  const seen = new Set<string>();
  for (const payout of payouts) {
    if (seen.has(payout.payoutId) || busyAccounts.has(payout.accountId)) continue;
    if (leftAlone(payout.payoutId)) continue;
    seen.add(payout.payoutId);
    const lane = lanes.get(payout.accountId);
    if (lane) lane.push(payout);
    else lanes.set(payout.accountId, [payout]);
  }
  return [...lanes.values()];
}

/** Seconds since the oldest createdAt (wall clock; a metric for humans, not a decision). */
export function backlogAgeSeconds(pending: readonly PayoutSummary[], nowMs: number): number {
  let oldestMs = Infinity;
  for (const p of pending) oldestMs = Math.min(oldestMs, Date.parse(p.createdAt));
  return Number.isFinite(oldestMs) ? Math.max(0, (nowMs - oldestMs) / 1000) : 0;
}

/** Fisher–Yates on a copy. */
export function shuffled<T>(items: readonly T[], random: () => number = Math.random): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/**
 * The loop's stop signal. Every lane passes it to its lock acquire, whose
 * call listens on it until it ends (and then stops listening), and the loop's
 * own poll sleep listens too: up to `lanes + 1` listeners at once by design.
 * Node warns of a leak from the 11th (MaxListenersExceededWarning at 16 lanes);
 * the limit is this bound, so a listener that really stays behind still warns.
 */
export function stopController(lanes: number): AbortController {
  const stop = new AbortController();
  setMaxListeners(lanes + 1, stop.signal);
  return stop;
}
