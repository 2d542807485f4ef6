import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { LockHandle } from '@dlock/lock-client';
import { LockSessionKeeper } from '@dlock/lock-nest';
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
  ) {}

  send(id: string, options: { signal?: AbortSignal; ttlMs?: number } = {}): Promise<SendResult> {
    return this.locks.withLock(`refund:${id}`, (handle) => this.sendUnder(handle, id), options);
  }

  /** One grant's work. The token comes from `handle`, passed in, never from context. */
  async sendUnder(handle: LockHandle, id: string): Promise<SendResult> {
    const token = handle.fencingToken;
    // The intent, before the side effect and in one fenced statement: an older token stops here.
    const intent = await fencedUpdate<{ amount_minor: string }>(this.db.manager, {
      table: 'refund',
      id,
      token,
      set: { status: 'SENDING', sent_token: token.toString() },
      when: { status: 'PENDING' },
      returning: ['amount_minor'],
    });
    if (!intent.row) return this.refusedBecause(id, token);
    handle.checkStillHeld();
    // Scoped to the token: a retry of this grant replays; a later grant never re-sends blindly.
    const order = { refundId: id, amountMinor: BigInt(intent.row.amount_minor) };
    await this.sink.deliver(order, `refund-${id}-${token}`, handle.signal);
    const done = await fencedUpdate(this.db.manager, {
      table: 'refund',
      id,
      token,
      set: { status: 'SENT' },
      acceptSameToken: true,
    });
    return done.passed ? 'sent' : 'fenced';
  }

  /** The fenced write changed nothing: a newer token wrote (FENCED_OUT), or the refund moved on. */
  private async refusedBecause(id: string, token: bigint): Promise<SendResult> {
    const rows: { status: string; fence: string }[] = await this.db.query(
      `SELECT status, fence FROM refund WHERE id = $1`,
      [id],
    );
    if (rows.length === 0) return 'unknown';
    if (BigInt(rows[0].fence) > token) return 'fenced';
    // SENDING under an earlier grant: whether the money moved is for a reconciler to find out.
    return rows[0].status === 'SENT' ? 'already-sent' : 'needs-check';
  }
}
