import { migratedDatabase, withClient } from '@dlock/testing';
import type { ReadOnlyDb } from '../src/persistence/read-only-db.gateway';
import { duePayouts, type DueQuery } from '../src/detective/persistence/rail-sweep.repository';

/**
 * The rail sweep's statement can walk the paydb index made for it
 * (migration SweepIndex1796140800000) in both of its shapes, the head sweep
 * from the look-back floor and a re-check round between two cursors, instead
 * of reading every payout on each pass. Real PostgreSQL, real migrations; the
 * planner is told to avoid sequential scans, as it would on a large table.
 */
describe('rail sweep statement on paydb', () => {
  let paydb: string;
  beforeAll(async () => {
    paydb = await migratedDatabase('paydb');
  });

  async function planOf(q: DueQuery): Promise<string> {
    let captured: { sql: string; params: unknown[] } | undefined;
    const recorder = {
      query: (sql: string, params: unknown[] = []) => {
        captured = { sql, params };
        return Promise.resolve([]);
      },
    } as unknown as ReadOnlyDb;
    await duePayouts(recorder, q);
    return withClient(paydb, async (c) => {
      await c.query('SET enable_seqscan = off');
      const { rows } = await c.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN ${captured!.sql}`,
        captured!.params,
      );
      return rows.map((r) => r['QUERY PLAN']).join('\n');
    });
  }

  const base = { settleMs: 60_000, lookbackMs: 7 * 86_400_000, limit: 200 };
  const cursor = { terminalAt: '2026-11-30T00:00:00.000000Z', payoutId: crypto.randomUUID() };

  it('uses payout_terminal_by_time from the look-back floor', async () => {
    expect(await planOf({ ...base, after: null, upTo: null })).toContain(
      'Index Scan using payout_terminal_by_time',
    );
  });

  it('uses payout_terminal_by_time between two cursors', async () => {
    expect(await planOf({ ...base, after: cursor, upTo: cursor })).toContain(
      'Index Scan using payout_terminal_by_time',
    );
  });
});
