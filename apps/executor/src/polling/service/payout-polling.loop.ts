import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { DlockError } from '@dlock/lock-api';
import type { LockSession } from '@dlock/lock-client';
import { LockSessionKeeper } from '@dlock/lock-nest';
import { inRootSpan } from '@dlock/tracing';
import { EXECUTOR_CONFIG, type ExecutorConfig } from '../../config';
import {
  PaymentResourceClient,
  RailProxyClient,
  type PayoutState,
  type PayoutSummary,
} from '@dlock/payout-contract';
import type { AttemptResult } from '../../execution/domain/execution-outcome.rules';
import { PayoutExecutionService } from '../../execution/service/payout-execution.service';
import { ExecutorMetrics } from '../../executor.metrics';
import { backlogAgeSeconds, lanesByAccount, shuffled, stopController } from '../domain/lanes.rules';

/**
 * States a dead worker can leave a payout in, polled for recovery by state.
 * RAIL_AMBIGUOUS is deliberately absent: nothing automated ever selects it (FR-23).
 */
const RECOVERY_STATES: readonly PayoutState[] = ['RAIL_ACKED', 'RAIL_SUBMITTED', 'CLAIMED'];

/** How often a pass with every lane busy still refreshes payout_backlog_age_seconds. */
const BACKLOG_REFRESH_MS = 1_000;

/**
 * The polling loop: a fixed delay between passes; each pass lists PENDING
 * payouts (and, every EXECUTOR_RECOVERY_INTERVAL_MS, the recovery states),
 * groups them by account and starts one lane per account not already busy,
 * up to EXECUTOR_CONCURRENCY lanes in flight. Lanes outlive the pass that
 * started them; a later pass fills the slots they free.
 */
@Injectable()
export class PayoutPollingLoop implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('polling-loop');
  private readonly stopping: AbortController;
  private readonly lanes = new Set<Promise<void>>();
  private readonly busyAccounts = new Set<string>();
  private loop: Promise<void> | undefined;
  private lastRecoveryMs = -Infinity;
  private lastBacklogMs = -Infinity;

  constructor(
    @Inject(EXECUTOR_CONFIG) private readonly config: ExecutorConfig,
    private readonly payments: PaymentResourceClient,
    private readonly rail: RailProxyClient,
    private readonly executor: PayoutExecutionService,
    private readonly sessions: LockSessionKeeper,
    private readonly metrics: ExecutorMetrics,
  ) {
    this.stopping = stopController(config.EXECUTOR_CONCURRENCY);
  }

  onApplicationBootstrap(): void {
    this.loop = this.run();
  }

  /**
   * SIGTERM: stop polling, let in-flight payouts finish or abort (bounded) and
   * release. The session closes after this, in LockSessionKeeper's shutdown hook.
   */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping.abort();
    await this.loop;
    const grace = sleep(this.config.EXECUTOR_SHUTDOWN_GRACE_MS, undefined, { ref: false });
    const drained = Promise.allSettled([...this.lanes]).then(() => true);
    if (!(await Promise.race([drained, grace.then(() => false)]))) {
      this.logger.warn({ lanes: this.lanes.size }, 'shutdown grace passed with payouts in flight');
    }
    this.payments.close();
    this.rail.close();
    this.logger.log({}, 'executor stopped');
  }

  private async run(): Promise<void> {
    const signal = this.stopping.signal;
    while (!signal.aborted) {
      try {
        await this.pass();
      } catch (err) {
        this.metrics.passesTotal.inc({ result: 'error' });
        this.logger.error({ err }, 'polling pass failed');
      }
      try {
        await sleep(this.config.EXECUTOR_POLL_INTERVAL_MS, undefined, { signal });
      } catch {
        // aborted: shutting down
      }
    }
  }

  private async pass(): Promise<void> {
    if (this.lanes.size >= this.config.EXECUTOR_CONCURRENCY) {
      // Every lane is busy: this pass could start nothing, so it lists nothing (a full P1
      // page per pass costs payment-resource and paydb CPU at short poll intervals). The
      // backlog gauge stays fresh from the oldest PENDING payout alone.
      await this.refreshBacklogGauge();
      this.metrics.passesTotal.inc({ result: 'full' });
      return;
    }
    const pending = await this.payments.list('PENDING', this.listOptions());
    this.metrics.backlogAgeSeconds.set(backlogAgeSeconds(pending, Date.now()));
    this.lastBacklogMs = performance.now();
    let recovery: PayoutSummary[] = [];
    const nowMs = performance.now();
    if (nowMs - this.lastRecoveryMs >= this.config.EXECUTOR_RECOVERY_INTERVAL_MS) {
      this.lastRecoveryMs = nowMs;
      for (const state of RECOVERY_STATES) {
        recovery = recovery.concat(await this.payments.list(state, this.listOptions()));
      }
    }
    if (this.stopping.signal.aborted) return;
    const freeSlots = this.config.EXECUTOR_CONCURRENCY - this.lanes.size;
    if (freeSlots <= 0) return;
    // Opened (or re-opened after a loss) on every pass, idle or not: readiness means a live session.
    let session: LockSession;
    try {
      session = await this.sessions.session();
    } catch (err) {
      // Fail closed: no lock-server, no payout. The backlog grows; nothing else happens.
      this.metrics.passesTotal.inc({ result: 'no_session' });
      this.logger.warn(
        { code: err instanceof DlockError ? err.code : undefined, err: (err as Error).message },
        'no lock session (lock-server unreachable?): no payout proceeds this pass',
      );
      return;
    }
    // Work a dead worker left half-way goes first; then a shuffle, so several workers reading
    // the same list do not all start on the same accounts and spend the pass contending.
    const all = lanesByAccount([...recovery, ...pending], this.busyAccounts, (id) =>
      this.executor.wasRefusedAsInvalid(id),
    );
    const lanes = [
      ...all.filter((lane) => lane[0].state !== 'PENDING'),
      ...shuffled(all.filter((lane) => lane[0].state === 'PENDING')),
    ];
    this.metrics.passesTotal.inc({ result: lanes.length === 0 ? 'idle' : 'ok' });
    for (const lane of lanes.slice(0, freeSlots)) this.startLane(session, lane);
  }

  private startLane(session: LockSession, lane: PayoutSummary[]): void {
    const accountId = lane[0].accountId;
    this.busyAccounts.add(accountId);
    const running = this.runLane(session, lane).finally(() => {
      this.busyAccounts.delete(accountId);
      this.lanes.delete(running);
      this.metrics.inFlight.set(this.lanes.size);
    });
    this.lanes.add(running);
    this.metrics.inFlight.set(this.lanes.size);
  }

  /**
   * One account's payouts, one at a time. Contention, a fence or a payout found already
   * finished ends the lane for this pass.
   */
  private async runLane(session: LockSession, lane: PayoutSummary[]): Promise<void> {
    for (const payout of lane) {
      if (this.stopping.signal.aborted) return;
      const kind = await inRootSpan(
        'payout attempt',
        { 'dlock.payout_id': payout.payoutId, 'dlock.payout_state': payout.state },
        () => this.attempt(session, payout),
      );
      if (kind === 'unavailable') return;
      // FENCED_OUT: a newer holder exists; this worker must not come back to the account this pass.
      if (kind === 'contended' || kind === 'fenced') return;
      // Another worker went through this account's list since the poll: the rest of this
      // lane is as stale, and each claim would only lose the same race (docs/executor.md).
      if (kind === 'skipped') return;
    }
  }

  /** One attempt, the root span of its trace (docs/tracing.md): acquire → … → release. */
  private async attempt(
    session: LockSession,
    payout: PayoutSummary,
  ): Promise<AttemptResult['kind'] | 'unavailable'> {
    try {
      const { kind } = await this.executor.execute(session, payout, this.stopping.signal);
      this.logger.debug({ payoutId: payout.payoutId, kind }, 'payout attempt done');
      return kind;
    } catch (err) {
      // The acquire itself failed: lock-server unreachable or the session is gone. Fail closed.
      this.logger.warn(
        {
          payoutId: payout.payoutId,
          code: err instanceof DlockError ? err.code : undefined,
          err: (err as Error).message,
        },
        'could not acquire the account lock; the payout waits',
      );
      return 'unavailable';
    }
  }

  /** P1 with limit 1 (the list is oldest first), at most once per BACKLOG_REFRESH_MS. */
  private async refreshBacklogGauge(): Promise<void> {
    const nowMs = performance.now();
    if (nowMs - this.lastBacklogMs < BACKLOG_REFRESH_MS) return;
    this.lastBacklogMs = nowMs;
    const oldest = await this.payments.list('PENDING', { ...this.listOptions(), limit: 1 });
    this.metrics.backlogAgeSeconds.set(backlogAgeSeconds(oldest, Date.now()));
  }

  private listOptions(): { limit: number; accountId?: string } {
    const accountId =
      this.config.DLOCK_HARNESS && this.config.EXECUTOR_ACCOUNT_ID
        ? this.config.EXECUTOR_ACCOUNT_ID
        : undefined;
    return { limit: this.config.EXECUTOR_BATCH_SIZE, ...(accountId ? { accountId } : {}) };
  }
}
