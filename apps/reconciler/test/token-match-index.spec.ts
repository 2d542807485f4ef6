import { migratedDatabase, withClient } from '@dlock/testing';
import type { ReadOnlyDb } from '../src/persistence/read-only-db.gateway';
import { CheckQueries } from '../src/detective/persistence/check-queries.repository';

/**
 * INV-07 reads rail submissions chunk by chunk from a cursor. Each chunk must
 * be the next rows of rail_submission_by_time, read in the index's order and
 * cut by the LIMIT, never a sort of every submission after the cursor: that
 * made a first run from the beginning cost the square of the history (an hour
 * at 2 M submissions; docs/scale.md). Real PostgreSQL, real migrations, a
 * table of 20,000 submissions.
 */
describe('INV-07 chunk statement on proxydb', () => {
  let proxydb: string;
  beforeAll(async () => {
    proxydb = await migratedDatabase('proxydb');
    // Enough rows, analysed, that reading a whole table and sorting it is not the cheap plan.
    await withClient(proxydb, async (c) => {
      await c.query(`
        INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token, owner_id,
                                     idempotency_key, client_ref, amount_minor, currency,
                                     beneficiary_ref, highest_token_seen, created_at)
        SELECT gen_random_uuid(), p, 'acct-' || i % 50, i, 'test', 'payout-' || p, 'po-' || p, 100,
               'EUR', 'ben', i, now() - interval '1 day' + i * interval '1 ms'
          FROM generate_series(1, 20000) i, LATERAL (SELECT md5('p' || i)::uuid AS p) x`);
      await c.query('ANALYZE rail_submission');
    });
  }, 30_000);

  async function chunkPlan(from: { createdAt: string; submissionId: string } | null) {
    let captured: { sql: string; params: unknown[] } | undefined;
    const recorder = {
      query: (sql: string, params: unknown[] = []) => {
        captured ??= { sql, params };
        return Promise.resolve([]); // no submissions: the check stops after the first chunk
      },
    } as unknown as ReadOnlyDb;
    await CheckQueries.submissionTokensMatchClaims(recorder, recorder, 60_000, undefined, from);
    return withClient(proxydb, async (c) => {
      const { rows } = await c.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN ${captured!.sql}`,
        captured!.params,
      );
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
  }

  it.each([
    ['from the beginning', null],
    [
      'from a cursor',
      { createdAt: '2026-11-30T00:00:00.000000Z', submissionId: crypto.randomUUID() },
    ],
  ])('%s: an index scan in order, no sort', async (_name, from) => {
    const plan = await chunkPlan(from);
    expect(plan).toContain('Index Scan using rail_submission_by_time');
    expect(plan).not.toMatch(/Sort/);
  });
});
