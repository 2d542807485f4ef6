import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  auditChains,
  describeBreak,
  emptyCheckpoint,
  verifyChain,
  verifyChainSince,
  type ChainBreak,
  type ChainCheckpoint,
  type ChainSpec,
} from '@dlock/persistence';
import { RECONCILER_CONFIG, type ReconcilerConfig } from '../../config';
import type { ReadOnlyDb } from '../../persistence/read-only-db.gateway';
import { LOCKDB, PAYDB, PROXYDB } from '../../persistence/databases.types';
import { ReconcilerMetrics } from '../../reconciler.metrics';
import { readStateFile, writeStateFile } from '../persistence/state.file';

/** What one chain's verification found: the links that held, and its first break. */
export interface AuditOutcome {
  chain: string;
  mode: 'checkpointed' | 'full';
  verifiedRows: number;
  firstBreak: ChainBreak | null;
}

/**
 * The audit chains' detective check (docs/audit.md). Each pass verifies what
 * was appended to every chain since its checkpoint (a verified, recorded
 * point: "Checkpoints"), so its cost follows the new work, not the history
 * (docs/scale.md); every RECONCILER_AUDIT_FULL_INTERVAL_MS a pass also walks
 * each chain whole, as `npm run audit:verify` does, for what was changed
 * before a checkpoint. Read-only; the checkpoints live in memory and, with
 * RECONCILER_AUDIT_CHECKPOINT_FILE, in that file. Only the first break of a
 * chain is reported, and its checkpoint stays where it was until a human has looked.
 */
@Injectable()
export class AuditChainService {
  private readonly logger = new Logger('audit');
  private checkpoints: Map<string, ChainCheckpoint> | null = null;
  // The first full walk is one interval after the start: a restart does not read the history again.
  private lastFull = Date.now();

  constructor(
    @Inject(LOCKDB) private readonly lockdb: ReadOnlyDb | null,
    @Inject(PAYDB) private readonly paydb: ReadOnlyDb,
    @Inject(PROXYDB) private readonly proxydb: ReadOnlyDb,
    @Inject(RECONCILER_CONFIG) private readonly config: ReconcilerConfig,
    private readonly metrics: ReconcilerMetrics,
  ) {
    if (lockdb === null) {
      this.logger.warn(
        { event: 'audit_chain_unchecked', chain: 'lock_revocation' },
        'LOCKDB_URL unset: the lock_revocation audit chain is not verified by the reconciler',
      );
    }
  }

  /** Verifies every chain it can reach; answers the outcomes of those that could be read. */
  async runPass(signal?: AbortSignal): Promise<AuditOutcome[]> {
    const checkpoints = await this.loadCheckpoints();
    const every = this.config.RECONCILER_AUDIT_FULL_INTERVAL_MS;
    const full = every > 0 && Date.now() - this.lastFull >= every;
    const outcomes: AuditOutcome[] = [];
    let complete = true;
    for (const db of [this.lockdb, this.paydb, this.proxydb]) {
      if (db === null) continue;
      for (const spec of auditChains(db.name)) {
        if (signal?.aborted) return outcomes;
        const outcome = await this.verify(db, spec, checkpoints, full, signal);
        if (outcome) outcomes.push(outcome);
        else complete = false;
      }
    }
    await this.saveCheckpoints(checkpoints);
    if (complete) {
      this.metrics.auditLastVerified.set(Date.now() / 1000);
      if (full) this.lastFull = Date.now();
    }
    return outcomes;
  }

  private async verify(
    db: ReadOnlyDb,
    spec: ChainSpec,
    checkpoints: Map<string, ChainCheckpoint>,
    full: boolean,
    signal?: AbortSignal,
  ): Promise<AuditOutcome | null> {
    const { chain } = spec;
    const query = <R>(sql: string, params: unknown[], s?: AbortSignal) =>
      db.query<R>(sql, params, s);
    let outcome: AuditOutcome;
    try {
      const since = await verifyChainSince(
        query,
        spec,
        checkpoints.get(chain) ?? emptyCheckpoint(chain),
        { settleMs: this.config.RECONCILER_AUDIT_SETTLE_MS, signal },
      );
      checkpoints.set(chain, since.checkpoint);
      outcome = {
        chain,
        mode: 'checkpointed',
        verifiedRows: Number(since.checkpoint.links),
        firstBreak: since.firstBreak,
      };
      if (full && !outcome.firstBreak) {
        const walked = await verifyChain(query, spec, { signal });
        outcome = {
          chain,
          mode: 'full',
          verifiedRows: walked.verifiedRows,
          firstBreak: walked.firstBreak,
        };
      }
    } catch (err) {
      if (signal?.aborted) return null;
      this.metrics.auditErrorsTotal.inc({ chain });
      const message = (err as Error).message;
      this.logger.warn(
        { event: 'audit_chain_check_failed', chain, err: message },
        'audit chain check failed',
      );
      // The gauge keeps its last value: "could not look" is not "intact".
      return null;
    }
    this.report(outcome);
    return outcome;
  }

  private report(outcome: AuditOutcome): void {
    const { chain, firstBreak: broken } = outcome;
    this.metrics.auditLinks.set({ chain }, outcome.verifiedRows);
    this.metrics.auditBreaks.set({ chain }, broken ? 1 : 0);
    if (broken) {
      this.logger.error(
        { event: 'audit_chain_break', ...broken, mode: outcome.mode },
        `audit chain broken: ${describeBreak(broken)}`,
      );
    }
  }

  /** Once per process: the file's checkpoints, or none (the first pass starts at the beginning). */
  private async loadCheckpoints(): Promise<Map<string, ChainCheckpoint>> {
    if (this.checkpoints) return this.checkpoints;
    const file = this.config.RECONCILER_AUDIT_CHECKPOINT_FILE;
    const loaded = new Map<string, ChainCheckpoint>();
    if (file) {
      const saved = ((await readStateFile(file)) ?? []) as ChainCheckpoint[];
      for (const cp of saved) loaded.set(cp.chain, cp);
    }
    this.checkpoints = loaded;
    return loaded;
  }

  private async saveCheckpoints(checkpoints: Map<string, ChainCheckpoint>): Promise<void> {
    const file = this.config.RECONCILER_AUDIT_CHECKPOINT_FILE;
    if (file) await writeStateFile(file, [...checkpoints.values()]);
  }
}
