import { createHash } from 'node:crypto';
import {
  auditChains,
  registerAuditChains,
  emptyCheckpoint,
  verifyChain,
  verifyChainSince,
  type ChainCheckpoint,
  type ChainQuery,
} from '@dlock/persistence';
import { PAYOUT_AUDIT_CHAIN_LIST } from '@dlock/payout-contract/audit-chains';
import type { DatabaseName } from '../../migrations';
import type { Db } from '../../apps/payment-resource/src/persistence/paydb.sql';
import { IdempotencyRepository } from '../../apps/payment-resource/src/payouts/persistence/idempotency.repository';
import { PayoutRepository } from '../../apps/payment-resource/src/payouts/persistence/payout.repository';
import type { ReadOnlyDb } from '../../apps/reconciler/src/persistence/read-only-db.gateway';
import { CheckCursors } from '../../apps/reconciler/src/detective/persistence/check-cursors.repository';
import { CheckQueries } from '../../apps/reconciler/src/detective/persistence/check-queries.repository';
import { duePayouts } from '../../apps/reconciler/src/detective/persistence/rail-sweep.repository';

// What the reconciler verifies: the lock service's chain and the payout services' (docs/audit.md).
registerAuditChains(PAYOUT_AUDIT_CHAIN_LIST);
const DATABASES: readonly DatabaseName[] = ['lockdb', 'paydb', 'proxydb'];

export interface Statement {
  db: DatabaseName;
  sql: string;
  params: unknown[];
}

export interface Recorder {
  seen: Statement[];
  urls: Record<DatabaseName, string>;
  query: (db: DatabaseName) => ChainQuery;
}

/** One periodic or per-request read, run through the services' own code (docs/scale.md). */
export interface Pass {
  name: string;
  /** Timed runs (default BENCH_SCALE_REPEAT): once for the passes that read the whole history. */
  repeat?: number;
  /** Work done once before the timed runs (e.g. a checkpoint's first pass). */
  prepare?: (urls: Record<DatabaseName, string>) => Promise<unknown>;
  run: (rec: Recorder, state: unknown) => Promise<unknown>;
}

/** The id bench/scale/seed.ts gives payout `i`: md5('payout-' || i)::uuid. */
function seededPayoutId(i: number): string {
  const h = createHash('md5').update(`payout-${i}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The reconciler's read-only view, over the recording connection. */
function readOnly(rec: Recorder, name: DatabaseName): ReadOnlyDb {
  const query = rec.query(name);
  return { name, query: (sql: string, params?: unknown[]) => query(sql, params ?? []) } as never;
}

/** payment-resource's Db (an EntityManager's query), over the recording connection. */
const repoDb = (rec: Recorder): Db =>
  ({ query: (sql: string, params?: unknown[]) => rec.query('paydb')(sql, params ?? []) }) as never;

async function detectiveRun(rec: Recorder, cursors: CheckCursors): Promise<void> {
  const [paydb, proxydb] = [readOnly(rec, 'paydb'), readOnly(rec, 'proxydb')];
  await CheckQueries.oneInFlightPerAccount(paydb);
  await cursors.ledgerGroupsBalanced(paydb);
  await cursors.balanceEqualsLedger(paydb);
  await cursors.oneLiveSubmissionPerPayout(proxydb);
  await cursors.submissionTokensMatchClaims(proxydb, paydb, 60_000);
  await CheckQueries.accountFences(paydb);
  await CheckQueries.railHighWater(proxydb);
}

/** Every chain from `checkpoints` on (moving them), as the reconciler's periodic pass does. */
async function auditSince(rec: Recorder, checkpoints: Map<string, ChainCheckpoint>) {
  for (const db of DATABASES) {
    for (const spec of auditChains(db)) {
      const from = checkpoints.get(spec.chain) ?? emptyCheckpoint(spec.chain);
      const report = await verifyChainSince(rec.query(db), spec, from, { settleMs: 60_000 });
      if (report.firstBreak) throw new Error(`${spec.chain}: ${report.firstBreak.kind}`);
      checkpoints.set(spec.chain, report.checkpoint);
    }
  }
}

export const PASSES: Pass[] = [
  {
    name: 'console/metrics statistics (PayoutRepository.stats)',
    run: (rec) => new PayoutRepository().stats(repoDb(rec), 3600, 60),
  },
  {
    name: 'statistics before: count(*) by state',
    run: (rec) =>
      rec.query('paydb')(`SELECT state, count(*)::int AS n FROM payout GROUP BY state`, []),
  },
  {
    name: 'executor poll: PENDING payouts (PayoutRepository.list)',
    run: (rec) => new PayoutRepository().list(repoDb(rec), { state: 'PENDING', limit: 64 }),
  },
  {
    name: 'idempotency lookup (IdempotencyRepository.find)',
    run: (rec) =>
      new IdempotencyRepository().find(repoDb(rec), {
        operation: 'claim',
        key: `payout-${seededPayoutId(1)}`,
        token: 1001n,
      }),
  },
  {
    name: 'rail sweep: next due (duePayouts)',
    run: (rec) =>
      duePayouts(readOnly(rec, 'paydb'), {
        after: null,
        upTo: null,
        settleMs: 60_000,
        lookbackMs: 7 * 86_400_000,
        limit: 200,
      }),
  },
  {
    name: 'detective checks, first run after a start (reads from the beginning)',
    repeat: 1,
    run: (rec) => detectiveRun(rec, new CheckCursors(60_000)),
  },
  {
    name: 'detective checks, every later run',
    prepare: async () => ({ cursors: new CheckCursors(60_000), primed: false }),
    run: async (rec, state) => {
      const s = state as { cursors: CheckCursors; primed: boolean };
      if (!s.primed) await detectiveRun(rec, s.cursors); // the first run, not timed apart
      s.primed = true;
      rec.seen.length = 0;
      await detectiveRun(rec, s.cursors);
    },
  },
  {
    name: 'audit chains, checkpointed pass (reconciler, every interval)',
    prepare: async () => ({ checkpoints: new Map<string, ChainCheckpoint>(), primed: false }),
    run: async (rec, state) => {
      const s = state as { checkpoints: Map<string, ChainCheckpoint>; primed: boolean };
      if (!s.primed) await auditSince(rec, s.checkpoints);
      s.primed = true;
      rec.seen.length = 0;
      await auditSince(rec, s.checkpoints);
    },
  },
  {
    name: 'audit chains, full walk (npm run audit:verify)',
    repeat: 1,
    run: async (rec) => {
      for (const db of DATABASES) {
        for (const spec of auditChains(db)) await verifyChain(rec.query(db), spec);
      }
    },
  },
];
