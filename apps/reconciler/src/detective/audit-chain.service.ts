import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  AUDIT_CHAINS,
  describeBreak,
  verifyChain,
  type ChainReport,
  type ChainSpec,
} from '@dlock/persistence';
import type { ReadOnlyDb } from '../db/read-only-db';
import { LOCKDB, PAYDB, PROXYDB } from '../db/tokens';
import { ReconcilerMetrics } from '../metrics';

/**
 * The audit chains' detective check (docs/audit.md): the same verification as
 * `npm run audit:verify`, on its own interval, read-only. It also remembers
 * how many partitions and links each chain had when it last verified intact:
 * records are only ever appended, so fewer next time (a tail or a whole
 * partition's chain removed while this process runs) is a break too. Bounded
 * memory: two numbers per chain, not every partition's head. Only the first
 * break of a chain is reported: everything after it is unverifiable until a
 * human has looked.
 */
@Injectable()
export class AuditChainService {
  private readonly logger = new Logger('audit');
  private readonly seen = new Map<string, { partitions: number; links: number }>();

  constructor(
    @Inject(LOCKDB) private readonly lockdb: ReadOnlyDb | null,
    @Inject(PAYDB) private readonly paydb: ReadOnlyDb,
    @Inject(PROXYDB) private readonly proxydb: ReadOnlyDb,
    private readonly metrics: ReconcilerMetrics,
  ) {
    if (lockdb === null) {
      this.logger.warn(
        { event: 'audit_chain_unchecked', chain: 'lock_revocation' },
        'LOCKDB_URL unset: the lock_revocation audit chain is not verified by the reconciler',
      );
    }
  }

  /** Verifies every chain it can reach; answers the reports of those that could be read. */
  async runPass(signal?: AbortSignal): Promise<ChainReport[]> {
    const reports: ChainReport[] = [];
    let complete = true;
    for (const db of [this.lockdb, this.paydb, this.proxydb]) {
      if (db === null) continue;
      for (const spec of AUDIT_CHAINS[db.name]) {
        if (signal?.aborted) return reports;
        const report = await this.verify(db, spec, signal);
        if (report) reports.push(report);
        else complete = false;
      }
    }
    if (complete) this.metrics.auditLastVerified.set(Date.now() / 1000);
    return reports;
  }

  private async verify(db: ReadOnlyDb, spec: ChainSpec, signal?: AbortSignal) {
    const { chain } = spec;
    let report: ChainReport;
    try {
      report = await verifyChain((sql, params, s) => db.query(sql, params, s), spec, { signal });
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
    this.metrics.auditLinks.set({ chain }, report.verifiedRows);
    this.shrunk(report);
    const broken = report.firstBreak;
    this.metrics.auditBreaks.set({ chain }, broken ? 1 : 0);
    if (broken) {
      this.logger.error(
        { event: 'audit_chain_break', ...broken, verifiedLinks: report.verifiedRows },
        `audit chain broken: ${describeBreak(broken)}`,
      );
    } else {
      this.seen.set(chain, { partitions: report.partitions, links: report.verifiedRows });
    }
    return report;
  }

  /** An intact chain with fewer partitions or links than last time lost records: a break. */
  private shrunk(report: ChainReport): void {
    const before = this.seen.get(report.chain);
    if (report.firstBreak || !before) return;
    if (report.partitions >= before.partitions && report.verifiedRows >= before.links) return;
    report.firstBreak = {
      chain: report.chain,
      table: report.table,
      kind: 'truncated',
      partition: null,
      rowId: null,
      seq: null,
      expected: `${before.partitions} partition(s), ${before.links} link(s) or more`,
      found: `${report.partitions} partition(s), ${report.verifiedRows} link(s)`,
    };
  }
}
