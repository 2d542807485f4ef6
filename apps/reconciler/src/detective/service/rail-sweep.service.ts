import { Inject, Injectable, Logger } from '@nestjs/common';
import { formatInstant } from '@dlock/lock-api';
import { RAIL_SWEEP_FINDINGS, railClientRef } from '@dlock/payout-contract';
import { SafetyEvents } from '@dlock/observability';
import { RECONCILER_CONFIG, type ReconcilerConfig } from '../../config';
import type { ReadOnlyDb } from '../../persistence/read-only-db.gateway';
import { PAYDB } from '../../persistence/databases.types';
import { ReconcilerMetrics } from '../../reconciler.metrics';
import { RailLookupClient } from '@dlock/payout-contract';
import { OFFENDERS_MAX } from '../persistence/check-queries.repository';
import { OpenFindings, type TerminalPayout } from '../domain/rail-sweep-findings.rules';
import { duePayouts, type SweepCursor } from '../persistence/rail-sweep.repository';

/** Open findings kept in memory; each was counted and logged when found. */
const OPEN_FINDINGS_MAX = 10_000;

/**
 * caught_up: every payout due was looked up; behind: the batch ran out first;
 * paused: the rail did not answer, the cursor waits on the payout it could not
 * look up; error: paydb could not be read.
 */
export type SweepStatus = 'caught_up' | 'behind' | 'paused' | 'error';

export interface SweepPass {
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  status: SweepStatus;
  lookedUp: number;
  newFindings: number;
  error?: string;
}

/** A walk over one stretch of the keyset, stopped by the batch, the end, or the rail. */
interface Walk {
  cursor: SweepCursor | null;
  lookedUp: number;
  newFindings: number;
  exhausted: boolean;
  railError?: string;
}

interface Recheck {
  after: SweepCursor | null;
  upTo: SweepCursor;
  startedAt: string;
}

/**
 * The detective rail sweep (docs/reconciler.md, "Rail sweep"): every payout
 * that reached POSTED, FAILED or ABANDONED is looked up at the rail once its
 * settlement delay has passed, and again by a slower re-check round over the
 * look-back window. It reports what disagrees; it never moves money or writes
 * anywhere. The cursors live in memory: a restart starts again at the
 * look-back floor, so it repeats look-ups but never skips one.
 */
@Injectable()
export class RailSweepService {
  private readonly logger = new Logger('rail-sweep');
  private readonly findings = new OpenFindings(OPEN_FINDINGS_MAX);
  /** The last payout the head sweep looked up; null until the first one. */
  private head: SweepCursor | null = null;
  private recheck: Recheck | null = null;
  private nextRecheckAtMs: number;
  private lastRecheckCompletedAt: string | null = null;
  private paused: { since: string; reason: string } | null = null;
  private lastPass: SweepPass | null = null;
  private lastCompletedAt: string | null = null;
  private passes = 0;
  private lookups = 0;

  constructor(
    @Inject(PAYDB) private readonly paydb: ReadOnlyDb,
    private readonly rail: RailLookupClient,
    @Inject(RECONCILER_CONFIG) private readonly config: ReconcilerConfig,
    private readonly metrics: ReconcilerMetrics,
    private readonly safety: SafetyEvents,
  ) {
    this.nextRecheckAtMs = Date.now() + config.RECONCILER_SWEEP_RECHECK_INTERVAL_MS;
    // The findings' counters start at 0 with SafetyEvents (their labels are fixed).
    for (const finding of RAIL_SWEEP_FINDINGS)
      this.metrics.railSweepFindingsOpen.set({ finding }, 0);
  }

  report() {
    return {
      passes: this.passes,
      lookups: this.lookups,
      cursor: this.head,
      paused: this.paused,
      recheck: this.recheck,
      nextRecheckAt: formatInstant(new Date(this.nextRecheckAtMs)),
      lastRecheckCompletedAt: this.lastRecheckCompletedAt,
      lastPass: this.lastPass,
      lastCompletedAt: this.lastCompletedAt,
      open: Object.fromEntries(RAIL_SWEEP_FINDINGS.map((f) => [f, this.findings.count(f)])),
      openFindings: this.findings.list(OFFENDERS_MAX),
    };
  }

  async runPass(signal: AbortSignal): Promise<SweepPass> {
    const started = Date.now();
    const endTimer = this.metrics.passSeconds.startTimer({ loop: 'rail_sweep' });
    const pass: SweepPass = {
      startedAt: formatInstant(new Date(started)),
      finishedAt: '',
      durationMs: 0,
      status: 'error',
      lookedUp: 0,
      newFindings: 0,
    };
    try {
      const walks = await this.walkAll(signal);
      pass.lookedUp = walks.reduce((n, w) => n + w.lookedUp, 0);
      pass.newFindings = walks.reduce((n, w) => n + w.newFindings, 0);
      const railError = walks.find((w) => w.railError !== undefined)?.railError;
      if (signal.aborted) {
        pass.status = 'paused';
        pass.error = 'stopping';
      } else if (railError !== undefined) {
        pass.status = 'paused';
        pass.error = railError;
        this.pause(railError);
      } else {
        pass.status = walks[0].exhausted ? 'caught_up' : 'behind';
        this.resume();
      }
    } catch (err) {
      pass.error = (err as Error).message;
      this.logger.warn({ event: 'rail_sweep_failed', err: pass.error }, 'rail sweep pass failed');
    } finally {
      endTimer();
      pass.finishedAt = formatInstant(new Date());
      pass.durationMs = Date.now() - started;
      if (pass.status === 'caught_up') {
        this.lastCompletedAt = pass.finishedAt;
        this.metrics.railSweepLastCompleted.set(Date.now() / 1000);
      }
      this.lastPass = pass;
      this.passes++;
    }
    return pass;
  }

  /** The head first (new terminal payouts), then a re-check round with what is left of the batch. */
  private async walkAll(signal: AbortSignal): Promise<Walk[]> {
    const batchMax = this.config.RECONCILER_SWEEP_BATCH_MAX;
    const head = await this.walk(this.head, null, batchMax, signal);
    this.head = head.cursor;
    const budget = batchMax - head.lookedUp;
    if (head.railError !== undefined || budget <= 0) return [head];
    if (this.recheck === null && this.head !== null && Date.now() >= this.nextRecheckAtMs) {
      this.recheck = { after: null, upTo: this.head, startedAt: formatInstant(new Date()) };
    }
    if (this.recheck === null) return [head];
    const round = await this.walk(this.recheck.after, this.recheck.upTo, budget, signal);
    this.recheck.after = round.cursor;
    if (round.exhausted) {
      this.recheck = null;
      this.lastRecheckCompletedAt = formatInstant(new Date());
      this.nextRecheckAtMs = Date.now() + this.config.RECONCILER_SWEEP_RECHECK_INTERVAL_MS;
    }
    return [head, round];
  }

  /**
   * Looks up due payouts after `after` in order. The cursor moves past a
   * payout only once the rail has answered for it, so a rail that is down
   * stops the walk where it is.
   */
  private async walk(
    after: SweepCursor | null,
    upTo: SweepCursor | null,
    limit: number,
    signal: AbortSignal,
  ): Promise<Walk> {
    const due = await duePayouts(
      this.paydb,
      {
        after,
        upTo,
        settleMs: this.config.RECONCILER_SWEEP_SETTLE_MS,
        lookbackMs: this.config.RECONCILER_SWEEP_LOOKBACK_MS,
        limit,
      },
      signal,
    );
    const walk: Walk = {
      cursor: after,
      lookedUp: 0,
      newFindings: 0,
      exhausted: due.length < limit,
    };
    for (const payout of due) {
      try {
        walk.newFindings += await this.lookUp(payout, signal);
      } catch (err) {
        return { ...walk, exhausted: false, railError: (err as Error).message };
      }
      walk.cursor = { terminalAt: payout.terminalAt, payoutId: payout.payoutId };
      walk.lookedUp++;
    }
    return walk;
  }

  /** One look-up; announces (and counts) each finding the first time it is seen. */
  private async lookUp(payout: TerminalPayout, signal: AbortSignal): Promise<number> {
    const clientRef = railClientRef(payout.payoutId);
    const lookup = await this.rail.lookup(clientRef, signal);
    this.lookups++;
    const railReferences = lookup.transfers.map((t) => t.railReference);
    const fresh = this.findings.observe(
      { ...payout, clientRef },
      railReferences,
      formatInstant(new Date()),
    );
    // The gauge moves with the look-up, so it never lags the counter (closed findings included).
    for (const finding of RAIL_SWEEP_FINDINGS) {
      this.metrics.railSweepFindingsOpen.set({ finding }, this.findings.count(finding));
    }
    for (const f of fresh) {
      this.safety.record(f.finding, {
        payoutId: f.payoutId,
        clientRef: f.clientRef,
        railReferences: f.railReferences,
        state: f.state,
        terminalAt: f.terminalAt,
      });
    }
    return fresh.length;
  }

  private pause(reason: string): void {
    if (this.paused === null) {
      this.paused = { since: formatInstant(new Date()), reason };
      this.logger.warn(
        { event: 'rail_sweep_paused', reason, cursor: this.head, recheck: this.recheck },
        'rail lookup failed: the sweep waits at its cursor and resumes there',
      );
    }
  }

  private resume(): void {
    if (this.paused === null) return;
    this.logger.log(
      { event: 'rail_sweep_resumed', pausedSince: this.paused.since, cursor: this.head },
      'rail answers again: the sweep resumed from its cursor',
    );
    this.paused = null;
  }
}
