import { Inject, Injectable, Logger } from '@nestjs/common';
import { formatInstant } from '@dlock/lock-api';
import { RECONCILER_CONFIG, type ReconcilerConfig } from '../../config';
import {
  ReconcilerMetrics,
  RESOLUTION_RESULTS,
  type ResolutionResult,
} from '../../reconciler.metrics';
import { RailProxyClient, PaymentResourceClient, type PayoutRecord } from '@dlock/payout-contract';
import { attemptEndedAt, classify, type Verdict } from '../domain/evidence.rules';
import { PayoutResolver } from './payout-resolver.service';

export interface DuplicateFlag {
  payoutId: string;
  accountId: string;
  clientRef: string;
  amountMinor: number;
  currency: string;
  railReferences: string[];
  detectedAt: string;
}

export interface MismatchFlag {
  payoutId: string;
  accountId: string;
  railReference: string;
  reason: string;
  detectedAt: string;
}

export interface SlaEscalation {
  payoutId: string;
  accountId: string;
  ambiguousAt: string;
  ageMs: number;
  escalatedAt: string;
}

export interface ResolutionPass {
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  status: 'ok' | 'error';
  error?: string;
  ambiguous: number;
  results: Record<ResolutionResult, number>;
}

function emptyResults(): Record<ResolutionResult, number> {
  return Object.fromEntries(RESOLUTION_RESULTS.map((r) => [r, 0])) as Record<
    ResolutionResult,
    number
  >;
}

/**
 * One pass over the RAIL_AMBIGUOUS payouts (FR-26, docs/payment-resource.md): look each one up
 * at the rail by its client reference, resolve what the evidence settles,
 * flag duplicates and SLA breaches for a human. It never submits anything to
 * the rail and never decides from time alone.
 */
@Injectable()
export class ResolutionService {
  private readonly logger = new Logger('resolution');
  /** Flagged payouts, so each is counted and announced once (pruned to what is still ambiguous). */
  private readonly duplicates = new Map<string, DuplicateFlag>();
  private readonly mismatches = new Map<string, MismatchFlag>();
  private readonly escalations = new Map<string, SlaEscalation>();
  private lastPass: ResolutionPass | null = null;
  private passes = 0;

  constructor(
    private readonly payments: PaymentResourceClient,
    private readonly proxy: RailProxyClient,
    @Inject(RECONCILER_CONFIG) private readonly config: ReconcilerConfig,
    private readonly resolver: PayoutResolver,
    private readonly metrics: ReconcilerMetrics,
  ) {}

  report() {
    return {
      passes: this.passes,
      lastPass: this.lastPass,
      duplicates: [...this.duplicates.values()],
      mismatches: [...this.mismatches.values()],
      pastSla: [...this.escalations.values()],
    };
  }

  async runPass(signal: AbortSignal): Promise<ResolutionPass> {
    const started = Date.now();
    const endTimer = this.metrics.passSeconds.startTimer({ loop: 'resolution' });
    const results = emptyResults();
    const pass: ResolutionPass = {
      startedAt: formatInstant(new Date(started)),
      finishedAt: '',
      durationMs: 0,
      status: 'ok',
      ambiguous: 0,
      results,
    };
    try {
      const batchMax = this.config.RECONCILER_BATCH_MAX;
      const items = await this.payments.listUpTo('RAIL_AMBIGUOUS', batchMax, signal);
      pass.ambiguous = items.length;
      this.metrics.ambiguousPayouts.set(items.length);
      const seen = new Set<string>();
      for (const item of items) {
        if (signal.aborted) break;
        seen.add(item.payoutId);
        const result = await this.resolveOne(item.payoutId, signal);
        results[result]++;
        this.metrics.resolutionTotal.inc({ result });
      }
      // Only a complete pass may forget flags: an unseen payout may simply not have been listed.
      if (!signal.aborted && items.length < batchMax) this.prune(seen);
    } catch (err) {
      pass.status = 'error';
      pass.error = (err as Error).message;
      this.logger.warn({ event: 'resolution_pass_failed', err: pass.error }, 'pass failed');
    } finally {
      endTimer();
      this.metrics.duplicatePaymentsOpen.set(this.duplicates.size);
      this.metrics.pastSla.set(this.escalations.size);
      pass.finishedAt = formatInstant(new Date());
      pass.durationMs = Date.now() - started;
      this.lastPass = pass;
      this.passes++;
    }
    return pass;
  }

  private async resolveOne(payoutId: string, signal: AbortSignal): Promise<ResolutionResult> {
    let result: ResolutionResult = 'error';
    let payout: PayoutRecord | undefined;
    try {
      payout = await this.payments.get(payoutId, signal);
      if (payout.state !== 'RAIL_AMBIGUOUS') return (result = 'not_ambiguous');
      // The rail's record as the proxy read it, with the receipt P8 is written on (docs/rail.md, "Receipts").
      const { lookup, railReceipt } = await this.proxy.evidence(payoutId, signal);
      const verdict = classify(
        {
          payoutId,
          accountId: payout.accountId,
          clientRef: payout.clientRef,
          amountMinor: payout.amountMinor,
          currency: payout.currency,
          attemptEndedAt: attemptEndedAt(
            [payout.submittedAt, payout.ambiguousAt],
            payout.createdAt,
          ),
        },
        lookup,
        new Date(),
        this.config.RECONCILER_SETTLEMENT_WINDOW_MS,
      );
      result = await this.act(payout, verdict, lookup, railReceipt, signal);
      return result;
    } catch (err) {
      this.logger.warn(
        { event: 'resolution_failed', payoutId, err: (err as Error).message },
        'could not resolve this payout in this pass',
      );
      return (result = 'error');
    } finally {
      const stillAmbiguous =
        result !== 'acked' && result !== 'not_found' && result !== 'not_ambiguous';
      if (payout && stillAmbiguous) this.checkSla(payout);
    }
  }

  private act(
    payout: PayoutRecord,
    verdict: Verdict,
    lookup: Parameters<PayoutResolver['apply']>[2],
    railReceipt: string | null,
    signal: AbortSignal,
  ): Promise<ResolutionResult> | ResolutionResult {
    switch (verdict.kind) {
      case 'acked':
      case 'not_found':
        if (railReceipt !== null) {
          return this.resolver.apply(payout, verdict, lookup, railReceipt, signal);
        }
        // The proxy's rules refused what ours allowed (e.g. a transfer it has no submission for).
        this.flagMismatch(payout, lookup.transfers[0]?.railReference ?? '', 'no rail receipt');
        return 'mismatch';
      case 'duplicate':
        this.flagDuplicate(
          payout,
          verdict.transfers.map((t) => t.railReference),
        );
        return 'duplicate';
      case 'mismatch':
        this.flagMismatch(payout, verdict.transfer.railReference, verdict.reason);
        return 'mismatch';
      case 'wait':
        return 'waiting';
    }
  }

  /** Two transfers for one reference: possibly paid twice. Reported, never auto-resolved. */
  private flagDuplicate(payout: PayoutRecord, railReferences: string[]): void {
    const known = this.duplicates.get(payout.payoutId);
    if (known && known.railReferences.length === railReferences.length) return;
    const flag: DuplicateFlag = {
      payoutId: payout.payoutId,
      accountId: payout.accountId,
      clientRef: payout.clientRef,
      amountMinor: payout.amountMinor,
      currency: payout.currency,
      railReferences,
      detectedAt: known?.detectedAt ?? formatInstant(new Date()),
    };
    this.duplicates.set(payout.payoutId, flag);
    if (!known) this.metrics.duplicatePaymentTotal.inc();
    this.logger.error(
      { event: 'duplicate_payment_detected', ...flag, transfers: railReferences.length },
      'the rail booked this payout more than once; left RAIL_AMBIGUOUS for a human',
    );
  }

  /** One transfer that is not this payout's amount or currency: a human reads the statement. */
  private flagMismatch(payout: PayoutRecord, railReference: string, reason: string): void {
    if (this.mismatches.has(payout.payoutId)) return;
    const flag: MismatchFlag = {
      payoutId: payout.payoutId,
      accountId: payout.accountId,
      railReference,
      reason,
      detectedAt: formatInstant(new Date()),
    };
    this.mismatches.set(payout.payoutId, flag);
    this.logger.error(
      { event: 'rail_evidence_mismatch', ...flag },
      'the rail booked a transfer that disagrees with the payout; a human must decide',
    );
  }

  /** past the SLA the payout is a human's problem; say so once, keep counting it. */
  private checkSla(payout: PayoutRecord): void {
    const since = payout.ambiguousAt ?? payout.submittedAt ?? payout.createdAt;
    const ageMs = Date.now() - Date.parse(since);
    if (ageMs < this.config.RECONCILER_AMBIGUOUS_SLA_MS) return;
    if (this.escalations.has(payout.payoutId)) return;
    const escalation: SlaEscalation = {
      payoutId: payout.payoutId,
      accountId: payout.accountId,
      ambiguousAt: since,
      ageMs,
      escalatedAt: formatInstant(new Date()),
    };
    this.escalations.set(payout.payoutId, escalation);
    this.metrics.escalatedTotal.inc();
    this.logger.error(
      {
        event: 'ambiguous_sla_exceeded',
        ...escalation,
        slaMs: this.config.RECONCILER_AMBIGUOUS_SLA_MS,
      },
      'ambiguous payout past its resolution SLA: an operator must decide (P7 abandon or resolve)',
    );
  }

  private prune(seen: Set<string>): void {
    for (const id of this.duplicates.keys()) if (!seen.has(id)) this.duplicates.delete(id);
    for (const id of this.mismatches.keys()) if (!seen.has(id)) this.mismatches.delete(id);
    for (const id of this.escalations.keys()) if (!seen.has(id)) this.escalations.delete(id);
  }
}
