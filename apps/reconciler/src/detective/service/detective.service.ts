import { Inject, Injectable, Logger } from '@nestjs/common';
import { formatInstant } from '@dlock/lock-api';
import { SafetyEvents } from '@dlock/observability';
import { RECONCILER_CONFIG, type ReconcilerConfig } from '../../config';
import type { ReadOnlyDb } from '../../persistence/read-only-db.gateway';
import { PAYDB, PROXYDB } from '../../persistence/databases.types';
import { ReconcilerMetrics } from '../../reconciler.metrics';
import {
  CHECK_INVARIANT,
  CHECK_NAMES,
  FINDING_EVENTS,
  type CheckName,
} from '../domain/check-names.types';
import { CheckCursors } from '../persistence/check-cursors.repository';
import { SubmissionGrants } from './submission-grants.service';
import { readStateFile, writeStateFile } from '../persistence/state.file';
import { CheckQueries, OFFENDERS_MAX, type Finding } from '../persistence/check-queries.repository';
import { TokenWatermarks, type Guard } from '../domain/token-watermarks.model';

export interface CheckResult {
  check: CheckName;
  invariant: string;
  status: 'ok' | 'violation' | 'error';
  violations: number;
  offenders: Record<string, unknown>[];
  error?: string;
}

export interface DetectiveRun {
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  /** clean: every check ran and found nothing; incomplete: at least one could not run. */
  status: 'clean' | 'violations' | 'incomplete';
  totalViolations: number;
  checks: CheckResult[];
}

/**
 * The detective controls of docs/references.md, read-only against paydb and proxydb.
 * They catch a primary guard that was broken or removed; they never repair
 * (docs/contract.md). Each check runs on its own, so one unreachable database leaves
 * the other database's checks running.
 */
@Injectable()
export class DetectiveService {
  private readonly logger = new Logger('detective');
  private readonly watermarks = new TokenWatermarks();
  private cursors: CheckCursors;
  private cursorsLoaded = false;
  private lastRun: DetectiveRun | null = null;
  private runs = 0;

  constructor(
    @Inject(PAYDB) private readonly paydb: ReadOnlyDb,
    @Inject(PROXYDB) private readonly proxydb: ReadOnlyDb,
    @Inject(RECONCILER_CONFIG) private readonly config: ReconcilerConfig,
    private readonly metrics: ReconcilerMetrics,
    private readonly safety: SafetyEvents,
    private readonly grants: SubmissionGrants,
  ) {
    for (const guard of ['account', 'rail'] satisfies Guard[]) safety.watchesRegression(guard);
    this.cursors = new CheckCursors(config.RECONCILER_CHECK_SETTLE_MS);
  }

  report(): { runs: number; lastRun: DetectiveRun | null } {
    return { runs: this.runs, lastRun: this.lastRun };
  }

  async runAll(signal?: AbortSignal): Promise<DetectiveRun> {
    await this.loadCursors();
    const started = Date.now();
    const endTimer = this.metrics.passSeconds.startTimer({ loop: 'checks' });
    const checks: CheckResult[] = [];
    for (const check of CHECK_NAMES) {
      if (signal?.aborted) break;
      checks.push(await this.runOne(check, signal));
    }
    endTimer();
    const totalViolations = checks.reduce((n, c) => n + c.violations, 0);
    const run: DetectiveRun = {
      startedAt: formatInstant(new Date(started)),
      finishedAt: formatInstant(new Date()),
      durationMs: Date.now() - started,
      status: checks.some((c) => c.status === 'error')
        ? 'incomplete'
        : totalViolations > 0
          ? 'violations'
          : 'clean',
      totalViolations,
      checks,
    };
    this.lastRun = run;
    this.runs++;
    await this.saveCursors();
    // A run with a failed check did not look everywhere: staleness alerts on this (docs/operations.md).
    if (run.status !== 'incomplete') this.metrics.lastCheckTimestamp.set(Date.now() / 1000);
    return run;
  }

  /**
   * Once per process: the cursors a previous process kept. A file that cannot
   * be read or is not a snapshot is reported and ignored: reading from the
   * beginning is slower, never wrong.
   */
  private async loadCursors(): Promise<void> {
    const file = this.config.RECONCILER_CHECK_CURSOR_FILE;
    if (this.cursorsLoaded || !file) return;
    this.cursorsLoaded = true;
    const settleMs = this.config.RECONCILER_CHECK_SETTLE_MS;
    try {
      const saved = await readStateFile(file);
      if (saved === undefined) return;
      this.cursors = CheckCursors.restore(settleMs, saved);
      this.logger.log({ event: 'detective_cursors_restored', file }, 'detective cursors restored');
    } catch (err) {
      this.logger.warn(
        { event: 'detective_cursors_unreadable', file, err: (err as Error).message },
        'detective cursors unreadable: the first run reads every record',
      );
    }
  }

  /** After every run; a failed write leaves the file one run behind (the next start reads more). */
  private async saveCursors(): Promise<void> {
    const file = this.config.RECONCILER_CHECK_CURSOR_FILE;
    if (!file) return;
    await writeStateFile(file, this.cursors.snapshot()).catch((err: Error) =>
      this.logger.warn(
        { event: 'detective_cursors_unsaved', file, err: err.message },
        'detective cursors could not be saved',
      ),
    );
  }

  private async runOne(check: CheckName, signal?: AbortSignal): Promise<CheckResult> {
    const invariant = CHECK_INVARIANT[check];
    let found: Finding;
    try {
      found = await this.find(check, signal);
    } catch (err) {
      this.metrics.checkErrorsTotal.inc({ check });
      const message = (err as Error).message;
      this.logger.warn({ event: 'check_failed', check, invariant, err: message }, 'check failed');
      // The gauge keeps its last value: "could not look" is not "found nothing".
      return { check, invariant, status: 'error', violations: 0, offenders: [], error: message };
    }
    this.metrics.invariantViolations.set({ check }, found.violations);
    if (found.violations > 0) {
      this.logger.error(
        {
          event: 'invariant_violation',
          check,
          invariant,
          violations: found.violations,
          offenders: found.offenders,
        },
        `${invariant} detective check ${check} found ${found.violations} violation(s)`,
      );
    }
    return {
      check,
      invariant,
      status: found.violations > 0 ? 'violation' : 'ok',
      violations: found.violations,
      offenders: found.offenders,
    };
  }

  private find(check: CheckName, signal?: AbortSignal): Promise<Finding> {
    switch (check) {
      case 'one_in_flight_payout_per_account':
        return CheckQueries.oneInFlightPerAccount(this.paydb, signal);
      case 'claim_history_consistent':
        return this.cursors.claimHistories(this.paydb, this.announcer(check), signal);
      case 'ledger_group_balanced':
        return this.cursors.ledgerGroupsBalanced(this.paydb, signal);
      case 'balance_equals_ledger':
        return this.cursors.balanceEqualsLedger(this.paydb, signal);
      case 'one_live_submission_per_payout':
        return this.cursors.oneLiveSubmissionPerPayout(this.proxydb, signal);
      case 'submission_token_matches_claim':
        return this.cursors.submissionTokensMatchClaims(
          this.proxydb,
          this.paydb,
          this.config.RECONCILER_TOKEN_MATCH_GRACE_MS,
          signal,
        );
      case 'submission_grant_proven':
        return this.cursors.submissionGrants(
          this.proxydb,
          this.grants.judge,
          this.announcer(check),
          signal,
        );
      case 'token_regression':
        return this.tokenRegressions(signal);
    }
  }

  /**
   * A check over kept records reads each record once, so what it finds first
   * is announced once: one log event per offender (docs/reconciler.md, "What a
   * finding means") and `reconciler_detective_findings_total{check}`.
   */
  private announcer(
    check: keyof typeof FINDING_EVENTS,
  ): (fresh: Record<string, unknown>[]) => void {
    return (fresh) => {
      this.metrics.detectiveFindingsTotal.inc({ check }, fresh.length);
      for (const offender of fresh) {
        this.logger.error(
          { ...offender, event: FINDING_EVENTS[check], check, invariant: CHECK_INVARIANT[check] },
          `${CHECK_INVARIANT[check]} detective check ${check}: ${FINDING_EVENTS[check]}`,
        );
      }
    };
  }

  /** INV-04: neither guard's value may ever go down between two runs. */
  private async tokenRegressions(signal?: AbortSignal): Promise<Finding> {
    // Read both before judging either, so a failure leaves the memory untouched.
    const fences = await CheckQueries.accountFences(this.paydb, signal);
    const marks = await CheckQueries.railHighWater(this.proxydb, signal);
    const regressions = [
      ...this.watermarks.observe('account', fences),
      ...this.watermarks.observe('rail', marks),
    ];
    for (const r of regressions) {
      if (!r.fresh) continue;
      this.safety.tokenRegression({
        guard: r.guard satisfies Guard,
        accountId: r.accountId,
        highestSeen: r.highestSeen.toString(),
        observed: r.observed?.toString() ?? null,
        source: 'reconciler',
      });
    }
    return {
      violations: regressions.length,
      offenders: regressions.slice(0, OFFENDERS_MAX).map((r) => ({
        guard: r.guard,
        accountId: r.accountId,
        highestSeen: r.highestSeen.toString(),
        observed: r.observed?.toString() ?? null,
      })),
    };
  }
}
