import type { Client } from 'pg';
import type { DatabaseName } from '../../migrations';
import type { Db } from '../../apps/payment-resource/src/persistence/paydb.sql';
import { PayoutRepository } from '../../apps/payment-resource/src/payouts/persistence/payout.repository';
import { withClient } from '../../libs/testing/src/postgres';
import { seedLockdb, seedPaydb, seedProxydb, type SeedSize } from './seed';

/**
 * A year of history in migrated lockdb, paydb and proxydb (seed.ts), made
 * ready to be read as production would find it: analysed, and the payout
 * counts folded as the first console or /metrics poll would (docs/scale.md,
 * "The payout counts"). Used by `bench:scale` and by `bench:e2e`'s history
 * variant (BENCH_HISTORY_PAYOUTS).
 */
export async function seedHistory(
  urls: Record<DatabaseName, string>,
  size: SeedSize,
): Promise<string> {
  // paydb is most of the work; proxydb and lockdb beside it use the second core.
  await Promise.all([
    withClient(urls.paydb, (c) => seedPaydb(c, size)),
    withClient(urls.proxydb, (c) => seedProxydb(c, size)).then(() =>
      withClient(urls.lockdb, (c) => seedLockdb(c, size)),
    ),
  ]);
  await withClient(urls.paydb, (c) => new PayoutRepository().stats(asDb(c), 3600, 60));
  for (const url of Object.values(urls)) await withClient(url, (c) => c.query('VACUUM ANALYZE'));
  const rows = await withClient(urls.paydb, (c) =>
    c.query<{ t: string; n: string }>(
      `SELECT 'payouts' AS t, count(*)::text AS n FROM payout
       UNION ALL SELECT 'transitions', count(*)::text FROM payout_transition
       UNION ALL SELECT 'ledger entries', count(*)::text FROM ledger_entry
       UNION ALL SELECT 'idempotency records', count(*)::text FROM idempotency_record`,
    ),
  );
  const seeded = rows.rows.map((r) => `${r.t} ${r.n}`).join(', ');
  console.log(`[bench] history: ${seeded}`);
  return seeded;
}

/** payment-resource's Db (an EntityManager's query) over one pg client. */
const asDb = (c: Client): Db =>
  ({
    query: async (sql: string, params?: unknown[]) => (await c.query(sql, params)).rows,
  }) as never;
