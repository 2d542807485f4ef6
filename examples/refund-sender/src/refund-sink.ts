import { setTimeout as sleep } from 'node:timers/promises';

export interface RefundOrder {
  refundId: string;
  amountMinor: bigint;
}

/**
 * The side effect the grant protects: a payment network that takes no token
 * (like the rail in docs/rail.md). A port, so a team plugs its own client in.
 */
export abstract class RefundSink {
  /**
   * Pays `order` out once per `idempotencyKey`: the same key again is a
   * replay, not a second payment. Rejects with the signal's reason, having
   * paid nothing, when `signal` aborts first.
   */
  abstract deliver(order: RefundOrder, idempotencyKey: string, signal: AbortSignal): Promise<void>;
}

/** The example's fake network: remembers what it paid, and can be made slow. */
export class MemoryRefundSink extends RefundSink {
  readonly delivered = new Map<string, RefundOrder>();
  /** How long a delivery takes before the money moves. */
  delayMs = 0;

  async deliver(order: RefundOrder, idempotencyKey: string, signal: AbortSignal): Promise<void> {
    await sleep(this.delayMs, undefined, { signal });
    signal.throwIfAborted();
    if (!this.delivered.has(idempotencyKey)) this.delivered.set(idempotencyKey, order);
  }
}
