/**
 * Cost of the audit chains' seal (docs/audit.md) where it bites: paydb write
 * transactions, each appending one payout_transition and a posting's two
 * ledger legs with the balance update payment-resource makes in the same
 * statement, from many connections at once, with and without the chain
 * migration. Each writer has its own payout and account and posts to clearing
 * shard `w % BENCH_SHARDS`, as the service does with PAYMENT_CLEARING_SHARDS;
 * BENCH_SHARED=1 puts every writer on one payout and one account instead (the
 * chains' worst case: one partition). Interleaved rounds on one embedded
 * PostgreSQL (fsync on), so the shared machine's noise falls on both sides alike.
 *
 *   npm run build && node dist/bench/audit/bench.js
 *   BENCH_WRITERS=16 BENCH_TXNS=100 BENCH_ROUNDS=3 BENCH_SHARDS=16 node dist/bench/audit/bench.js
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import 'reflect-metadata';
import { MIGRATIONS } from '../../migrations';
import { startEmbeddedPostgres } from '../../libs/testing/src/embedded-postgres';
import { loadGate, loadLine, markNoisy } from '../load-gate';
import { createMigratedDatabase } from '../../libs/persistence/src/migrate';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const WRITERS = Number(process.env.BENCH_WRITERS ?? 16);
const TXNS = Number(process.env.BENCH_TXNS ?? 100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SHARDS = Number(process.env.BENCH_SHARDS ?? 16);
const SHARED = process.env.BENCH_SHARED === '1';

const payoutOf = (w: number) => `00000000-0000-4000-8000-${String(w).padStart(12, '0')}`;
const accountOf = (w: number) => `acct-${SHARED ? 0 : w}`;
const clearingOf = (w: number) => `clearing-EUR-${String(w % SHARDS).padStart(2, '0')}`;

async function database(adminUrl: string, name: string, sealed: boolean): Promise<string> {
  const all = MIGRATIONS.paydb as (new () => unknown)[];
  const url = await createMigratedDatabase(adminUrl, name, sealed ? all : all.slice(0, -1));
  const c = new Client({ connectionString: url });
  await c.connect();
  for (let w = 0; w < Math.max(WRITERS, SHARDS); w++) {
    await c.query(
      `INSERT INTO account (account_id, kind, currency) VALUES ($1, 'CUSTOMER', 'EUR'), ($2, 'CLEARING', 'EUR')
       ON CONFLICT DO NOTHING`,
      [accountOf(w), clearingOf(w)],
    );
    await c.query(
      `INSERT INTO payout (payout_id, account_id, amount_minor, currency, beneficiary_ref, client_ref)
       VALUES ($1, $2, 1, 'EUR', 'b', $3)`,
      [payoutOf(w), accountOf(w), `po-${payoutOf(w)}`],
    );
  }
  await c.end();
  return url.toString();
}

/** Ledger legs and the balances they move, in one statement, as LedgerRepository.post writes them. */
const POST_SQL = `WITH entries AS (
   INSERT INTO ledger_entry (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, kind)
   VALUES ($1, $2, $4, -5, $5, 'OPENING_BALANCE'), ($3, $2, $5, 5, $4, 'OPENING_BALANCE')
   RETURNING account_id, amount_minor),
 deltas AS (SELECT account_id, sum(amount_minor) AS delta FROM entries GROUP BY account_id)
 UPDATE account a SET balance_minor = a.balance_minor + d.delta, version = a.version + 1
   FROM deltas d WHERE a.account_id = d.account_id`;

async function writer(url: string, w: number): Promise<void> {
  const c = new Client({ connectionString: url });
  await c.connect();
  const payout = payoutOf(SHARED ? 0 : w);
  for (let i = 0; i < TXNS; i++) {
    await c.query('BEGIN');
    // The payout's row first, as every transition's conditional UPDATE takes it.
    await c.query(`SELECT 1 FROM payout WHERE payout_id = $1 FOR NO KEY UPDATE`, [payout]);
    await c.query(
      `INSERT INTO payout_transition (payout_id, from_state, to_state, event, actor, token)
       VALUES ($1, 'CLAIMED', 'RAIL_SUBMITTED', 'BENCH', 'w', 7)`,
      [payout],
    );
    await c.query(POST_SQL, [
      randomUUID(),
      randomUUID(),
      randomUUID(),
      accountOf(w),
      clearingOf(w),
    ]);
    await c.query('COMMIT');
  }
  await c.end();
}

async function round(url: string): Promise<number> {
  const started = process.hrtime.bigint();
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(url, w)));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return (WRITERS * TXNS) / seconds;
}

async function main(): Promise<void> {
  // Refuses to measure a busy machine (bench/load-gate.ts).
  const gate = loadGate('bench:audit');
  const pg = await startEmbeddedPostgres({
    dir: path.join(ROOT, '.tmp', 'bench-audit-pg'),
    fsync: true,
  });
  console.log(
    `[bench] ${WRITERS} writer(s) x ${TXNS} txn(s), ${ROUNDS} round(s), ${SHARDS} clearing shard(s)${SHARED ? ', one shared payout and account' : ''}`,
  );
  try {
    const results: Record<'plain' | 'sealed', number[]> = { plain: [], sealed: [] };
    for (let r = 0; r < ROUNDS; r++) {
      for (const side of ['plain', 'sealed'] as const) {
        const url = await database(pg.adminUrl, `bench_${side}_${r}`, side === 'sealed');
        const tps = await round(url);
        results[side].push(tps);
        console.log(
          `[bench] round ${r + 1} ${side}: ${tps.toFixed(1)} txn/s (load ${os.loadavg()[0].toFixed(1)})`,
        );
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const [p, s] = [median(results.plain), median(results.sealed)];
    console.log(
      `[bench] median txn/s: plain ${p.toFixed(1)}, sealed ${s.toFixed(1)} (${(((s - p) / p) * 100).toFixed(1)} %)`,
    );
    console.log(markNoisy(gate, loadLine(gate)));
  } finally {
    await pg.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
