import { Inject, Injectable, Logger } from '@nestjs/common';
import { DlockError, FencedOutError, LockLostError, ContentionError } from '@dlock/lock-api';
import type { LockHandle } from '@dlock/lock-client';
import type { ReadOnlyDb } from '../../persistence/read-only-db.gateway';
import { PROXYDB } from '../../persistence/databases.types';
import type { ResolutionResult } from '../../reconciler.metrics';
import {
  PaymentResourceClient,
  payoutLockKey,
  type PayoutRecord,
  type RailLookup,
} from '@dlock/payout-contract';
import { evidenceText, type Verdict } from '../domain/evidence.rules';
import { LockSessionKeeper } from '@dlock/lock-nest';

type Writable = Extract<Verdict, { kind: 'acked' } | { kind: 'not_found' }>;

/** The fields of every log line about one payout's resolution. */
interface ResolutionLog {
  payoutId: string;
  accountId: string;
  token: string;
}

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
    private readonly payments: PaymentResourceClient,
    @Inject(PROXYDB) private readonly proxydb: ReadOnlyDb,
    private readonly sessions: LockSessionKeeper,
  ) {}

  async apply(
    payout: PayoutRecord,
    verdict: Writable,
    lookup: RailLookup,
    railReceipt: string,
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
    const log: ResolutionLog = {
      payoutId: payout.payoutId,
      accountId: payout.accountId,
      token: handle.fence.token.toString(),
    };
    let resolved = false;
    try {
      const evidence = { verdict, lookup, railReceipt };
      const railReference = await this.resolve(handle, payout, evidence, submissionId);
      resolved = true;
      this.logger.log(
        { event: 'ambiguous_resolved', resolution: verdict.kind, railReference, ...log },
        `RAIL_AMBIGUOUS payout resolved from rail evidence: ${verdict.kind}`,
      );
      if (verdict.kind === 'acked') {
        await this.post(handle, payout, { verdict, railReceipt }, submissionId, log);
      }
      return verdict.kind;
    } catch (err) {
      return this.stopped(err, resolved, verdict.kind, log);
    } finally {
      await handle.release();
    }
  }

  /** P8 under the held lock; returns the rail reference it recorded, if any. */
  private async resolve(
    handle: LockHandle,
    payout: PayoutRecord,
    {
      verdict,
      lookup,
      railReceipt,
    }: { verdict: Writable; lookup: RailLookup; railReceipt: string },
    submissionId: string | null,
  ): Promise<string | undefined> {
    handle.checkStillHeld();
    const railReference = verdict.kind === 'acked' ? verdict.transfer.railReference : undefined;
    await this.payments.resolve(
      payout.payoutId,
      handle.fence,
      {
        resolution: verdict.kind === 'acked' ? 'ACKED' : 'NOT_FOUND',
        evidence: evidenceText(verdict, lookup),
        ...(railReference !== undefined ? { railReference } : {}),
        ...(submissionId !== null ? { submissionId } : {}),
      },
      railReceipt,
      handle.signal,
    );
    return railReference;
  }

  /** Posts an ACKED resolution under the same lock and on the same receipt, when the submission is known. */
  private async post(
    handle: LockHandle,
    payout: PayoutRecord,
    { verdict, railReceipt }: { verdict: Extract<Verdict, { kind: 'acked' }>; railReceipt: string },
    submissionId: string | null,
    log: ResolutionLog,
  ): Promise<void> {
    if (submissionId === null) {
      this.logger.warn(
        { event: 'posting_deferred', ...log },
        'no submission id known for this payout; the posting is left to a later holder',
      );
      return;
    }
    handle.checkStillHeld();
    await this.payments.post(
      payout.payoutId,
      handle.fence,
      { railReference: verdict.transfer.railReference, submissionId, railReceipt },
      handle.signal,
    );
  }

  /**
   * What a failed write means for this pass: a newer holder, a lost lock or a payout
   * moved on end the attempt (the resolution stands when it was written); anything else
   * after the resolution defers the posting, and before it is rethrown.
   */
  private stopped(
    err: unknown,
    resolved: boolean,
    kind: Writable['kind'],
    log: ResolutionLog,
  ): ResolutionResult {
    if (err instanceof FencedOutError || (err instanceof DlockError && err.code === 'FENCED_OUT')) {
      // payment-resource already logged fenced_out and counted it; we only stop.
      this.logger.warn(
        { event: 'resolution_fenced_out', resolved, ...log, details: err.details },
        'a newer holder wrote this account; stopping for this payout in this pass',
      );
      return resolved ? kind : 'fenced';
    }
    if (err instanceof LockLostError) {
      this.logger.warn({ event: 'resolution_lock_lost', resolved, ...log }, 'lock lost');
      return resolved ? kind : 'lost';
    }
    if (err instanceof DlockError && err.code === 'PAYOUT_NOT_CLAIMABLE') {
      // Someone else moved it first (posted, abandoned): nothing left for us to do.
      return resolved ? kind : 'not_ambiguous';
    }
    if (resolved) {
      this.logger.warn(
        { event: 'posting_deferred', ...log, err: (err as Error).message },
        'resolved, but the posting failed; a later holder completes it from RAIL_ACKED',
      );
      return kind;
    }
    throw err;
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
