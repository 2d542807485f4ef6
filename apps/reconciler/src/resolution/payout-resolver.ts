import { Inject, Injectable, Logger } from '@nestjs/common';
import { DlockError, FencedOutError, LockLostError, ContentionError } from '@dlock/lock-api';
import type { LockHandle } from '@dlock/lock-client';
import type { ReadOnlyDb } from '../db/read-only-db';
import { PROXYDB } from '../db/tokens';
import type { ResolutionResult } from '../metrics';
import {
  PaymentResourceClient,
  payoutLockKey,
  type PayoutRecord,
  type RailLookup,
} from '@dlock/payout-contract';
import { evidenceText, type Verdict } from './evidence';
import { LockSessionKeeper } from '@dlock/lock-nest';

export const PAYMENT_RESOURCE = Symbol('PAYMENT_RESOURCE');

type Writable = Extract<Verdict, { kind: 'acked' } | { kind: 'not_found' }>;

/**
 * Applies a verdict the evidence allows (P8 ACKED or NOT_FOUND) the way any
 * writer does: account lock `payout:{accountId}`, the token captured once and
 * passed explicitly, checkStillHeld() before each write, release in finally.
 * FENCED_OUT or a lost lock ends the attempt for this payout in this pass.
 */
@Injectable()
export class PayoutResolver {
  private readonly logger = new Logger('resolver');

  constructor(
    @Inject(PAYMENT_RESOURCE) private readonly payments: PaymentResourceClient,
    @Inject(PROXYDB) private readonly proxydb: ReadOnlyDb,
    private readonly sessions: LockSessionKeeper,
  ) {}

  async apply(
    payout: PayoutRecord,
    verdict: Writable,
    lookup: RailLookup,
    signal: AbortSignal,
  ): Promise<ResolutionResult> {
    const submissionId = payout.submissionId ?? (await this.liveSubmissionId(payout.payoutId));
    const session = await this.sessions.session(signal);
    let handle: LockHandle;
    try {
      handle = await session.acquire(payoutLockKey(payout.accountId), { signal });
    } catch (err) {
      if (err instanceof ContentionError) return 'contended';
      throw err;
    }
    const fence = handle.fence;
    const log = {
      payoutId: payout.payoutId,
      accountId: payout.accountId,
      token: fence.token.toString(),
    };
    let resolved = false;
    try {
      handle.checkStillHeld();
      const railReference = verdict.kind === 'acked' ? verdict.transfer.railReference : undefined;
      await this.payments.resolve(
        payout.payoutId,
        fence,
        {
          resolution: verdict.kind === 'acked' ? 'ACKED' : 'NOT_FOUND',
          evidence: evidenceText(verdict, lookup),
          ...(railReference !== undefined ? { railReference } : {}),
          ...(submissionId !== null ? { submissionId } : {}),
        },
        handle.signal,
      );
      resolved = true;
      this.logger.log(
        { event: 'ambiguous_resolved', resolution: verdict.kind, railReference, ...log },
        `RAIL_AMBIGUOUS payout resolved from rail evidence: ${verdict.kind}`,
      );
      if (verdict.kind === 'acked') {
        if (submissionId === null) {
          this.logger.warn(
            { event: 'posting_deferred', ...log },
            'no submission id known for this payout; the posting is left to a later holder',
          );
        } else {
          handle.checkStillHeld();
          await this.payments.post(
            payout.payoutId,
            fence,
            { railReference: verdict.transfer.railReference, submissionId },
            handle.signal,
          );
        }
      }
      return verdict.kind;
    } catch (err) {
      if (
        err instanceof FencedOutError ||
        (err instanceof DlockError && err.code === 'FENCED_OUT')
      ) {
        // payment-resource already logged fenced_out and counted it; we only stop.
        this.logger.warn(
          { event: 'resolution_fenced_out', resolved, ...log, details: err.details },
          'a newer holder wrote this account; stopping for this payout in this pass',
        );
        return resolved ? verdict.kind : 'fenced';
      }
      if (err instanceof LockLostError) {
        this.logger.warn({ event: 'resolution_lock_lost', resolved, ...log }, 'lock lost');
        return resolved ? verdict.kind : 'lost';
      }
      if (err instanceof DlockError && err.code === 'PAYOUT_NOT_CLAIMABLE') {
        // Someone else moved it first (posted, abandoned): nothing left for us to do.
        return resolved ? verdict.kind : 'not_ambiguous';
      }
      if (resolved) {
        this.logger.warn(
          { event: 'posting_deferred', ...log, err: (err as Error).message },
          'resolved, but the posting failed; a later holder completes it from RAIL_ACKED',
        );
        return verdict.kind;
      }
      throw err;
    } finally {
      await handle.release();
    }
  }

  /** The proxy's live submission for the payout, when paydb did not record its id. */
  private async liveSubmissionId(payoutId: string): Promise<string | null> {
    try {
      const rows = await this.proxydb.query<{ submission_id: string }>(
        `SELECT submission_id::text AS submission_id FROM rail_submission
          WHERE payout_id = $1 AND outcome IS DISTINCT FROM 'FENCED'
            AND outcome IS DISTINCT FROM 'WITHDRAWN'
          ORDER BY created_at LIMIT 2`,
        [payoutId],
      );
      return rows.length === 1 ? rows[0].submission_id : null;
    } catch (err) {
      this.logger.warn({ payoutId, err: (err as Error).message }, 'proxydb lookup failed');
      return null;
    }
  }
}
