/**
 * Cost of the audit chains' seal (docs/audit.md) where it bites: paydb write
 * transactions, each appending one payout_transition and two ledger legs (a
 * claim-to-post's share), from many connections at once, with and without
 * the chain migration. Interleaved rounds on one embedded PostgreSQL (fsync
 * on), so the shared machine's noise falls on both sides alike.
 *
 *   npm run build && node dist/bench/audit/bench.js
 *   BENCH_WRITERS=16 BENCH_TXNS=100 BENCH_ROUNDS=3 node dist/bench/audit/bench.js
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { startEmbeddedPostgres } from '../../libs/testing/src/embedded-postgres';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const WRITERS = Number(process.env.BENCH_WRITERS ?? 16);
const TXNS = Number(process.env.BENCH_TXNS ?? 100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

async function database(adminUrl: string, name: string, sealed: boolean): Promise<string> {
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const all = MIGRATIONS.paydb as (new () => unknown)[];
  const ds = new DataSource({
    type: 'postgres',
    url: url.toString(),
    migrations: sealed ? all : all.slice(0, -1),
    logging: false,
  });
  await ds.initialize();
  await ds.runMigrations({ transaction: 'each' });
  await ds.destroy();
  const c = new Client({ connectionString: url.toString() });
  await c.connect();
  await c.query(`INSERT INTO account (account_id, kind, currency) VALUES ('funding-EUR', 'FUNDING', 'EUR'),
                 ('acct-1', 'CUSTOMER', 'EUR')`);
  await c.query(`INSERT INTO payout (payout_id, account_id, amount_minor, currency, beneficiary_ref, client_ref)
                 VALUES ('00000000-0000-4000-8000-000000000001', 'acct-1', 1, 'EUR', 'b', 'po-00000000-0000-4000-8000-000000000001')`);
  await c.end();
  return url.toString();
}

async function writer(url: string): Promise<void> {
  const c = new Client({ connectionString: url });
  await c.connect();
  for (let i = 0; i < TXNS; i++) {
    await c.query('BEGIN');
    await c.query(
      `INSERT INTO payout_transition (payout_id, from_state, to_state, event, actor, token)
       VALUES ('00000000-0000-4000-8000-000000000001', 'CLAIMED', 'RAIL_SUBMITTED', 'BENCH', 'w', 7)`,
    );
    await c.query(
      `INSERT INTO ledger_entry (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, kind)
       VALUES ($1, $2, 'funding-EUR', -5, 'acct-1', 'OPENING_BALANCE'), ($3, $2, 'acct-1', 5, 'funding-EUR', 'OPENING_BALANCE')`,
      [randomUUID(), randomUUID(), randomUUID()],
    );
    await c.query('COMMIT');
  }
  await c.end();
}

async function round(url: string): Promise<number> {
  const started = process.hrtime.bigint();
  await Promise.all(Array.from({ length: WRITERS }, () => writer(url)));
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return (WRITERS * TXNS) / seconds;
}

async function main(): Promise<void> {
  const pg = await startEmbeddedPostgres({
    dir: path.join(ROOT, '.tmp', 'bench-audit-pg'),
    fsync: true,
  });
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
  } finally {
    await pg.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
