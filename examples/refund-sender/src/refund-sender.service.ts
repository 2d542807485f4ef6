import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { LockHandle } from '@dlock/lock-client';
import { LockSessionKeeper, SafetyEvents } from '@dlock/lock-nest';
import { fencedUpdate } from '@dlock/persistence';
import { RefundSink } from './refund-sink';

export type SendResult = 'sent' | 'already-sent' | 'fenced' | 'needs-check' | 'unknown';

/** Sends each refund at most once, under a dlock grant and its own table's fence (docs/extending.md). */
@Injectable()
export class RefundSender {
  constructor(
    private readonly locks: LockSessionKeeper,
    private readonly db: DataSource,
    private readonly sink: RefundSink,
    private readonly safety: SafetyEvents,
  ) {}

  send(id: string, options: { signal?: AbortSignal; ttlMs?: number } = {}): Promise<SendResult> {
    return this.locks.withLock(`refund:${id}`, (handle) => this.sendUnder(handle, id), options);
  }

  /** One grant's work. The token comes from `handle`, passed in, never from context. */
  async sendUnder(handle: LockHandle, id: string): Promise<SendResult> {
    const token = handle.fencingToken;
    // The intent, before the side effect, in one fenced statement: an older token stops here.
    const intent = await this.write(id, token, { status: 'SENDING', sent_token: `${token}` }, true);
    if (!intent.row) return this.refusedBecause(id, token);
    handle.checkStillHeld();
    const order = { refundId: id, amountMinor: BigInt(intent.row.amount_minor) };
    try {
      // Keyed by refund AND token: a retry within this grant replays instead of paying again.
      await this.sink.deliver(order, `refund-${id}-${token}`, handle.signal);
    } catch (err) {
      // Lock lost: the aborted delivery paid nothing (RefundSink's contract); a later grant sends it.
      if (handle.signal.aborted) await this.write(id, token, { status: 'PENDING' });
      throw err;
    }
    return (await this.write(id, token, { status: 'SENT' })).row ? 'sent' : 'fenced';
  }

  /** A grant's first write needs a PENDING refund and a newer token; its later ones, its own token. */
  private write(id: string, token: bigint, set: Record<string, unknown>, first = false) {
    const spec = { table: 'refund', id, token, set, returning: ['amount_minor'] };
    const rule = first ? { when: { status: 'PENDING' } } : { acceptSameToken: true };
    return fencedUpdate<{ amount_minor: string }>(this.db.manager, { ...spec, ...rule });
  }

  /** The fenced write changed nothing: a newer token wrote (FENCED_OUT), or the refund moved on. */
  private async refusedBecause(id: string, token: bigint): Promise<SendResult> {
    const rows: { status: string; fence: string }[] = await this.db.query(
      `SELECT status, fence FROM refund WHERE id = $1`,
      [id],
    );
    if (rows.length === 0) return 'unknown';
    if (BigInt(rows[0].fence) > token) return 'fenced';
    if (rows[0].status === 'SENT') return 'already-sent';
    // SENDING under an earlier grant: whether the money moved is for a reconciler to find out,
    // and an operator's alert says so (src/refund-safety-events.ts).
    this.safety.record('refund_needs_check', { refundId: id, token });
    return 'needs-check';
  }
}
