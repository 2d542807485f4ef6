import type { NestExpressApplication } from '@nestjs/platform-express';
import { NestFactory } from '@nestjs/core';
import { register } from 'prom-client';
import type { DataSource } from 'typeorm';
import { applyHttpContract } from '@dlock/http-contract';
import {
  http,
  migratedDatabase,
  registerAudience,
  registerProofSource,
  paymentResourceProofs,
  testAuthEnv,
  testRequestAuth,
  withClient,
  type HttpResult,
} from '@dlock/testing';
import { PaymentResourceModule } from '../src/app.module';
import { paydbDataSource } from '../src/persistence/paydb-data-source.factory';
import { Fixtures } from '../src/cli/fixture-data.repository';

export interface Harness {
  base: string;
  dbUrl: string;
  fixtures: Fixtures;
  close(): Promise<void>;
}

/** payment-resource in-process on a real port, over a fresh migrated paydb. */
export async function startPaymentResource(
  env: Record<string, string> = {},
  dbUrl?: string,
): Promise<Harness> {
  const url = dbUrl ?? (await migratedDatabase('paydb'));
  register.clear(); // one process may host several app instances in a test file
  const module = await PaymentResourceModule.forRoot({
    env: { PAYDB_URL: url, LOG_LEVEL: 'silent', ...(await testAuthEnv()), ...env },
  });
  const app = await NestFactory.create<NestExpressApplication>(module, {
    bodyParser: false,
    logger: false,
  });
  applyHttpContract(app, await testRequestAuth('payment-resource', env.AUTH_POLICY));
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : 0;
  registerAudience(`http://127.0.0.1:${port}`, 'payment-resource');
  registerProofSource(`http://127.0.0.1:${port}`, paymentResourceProofs(url));
  const ds: DataSource = await paydbDataSource({
    url,
    poolMax: 4,
    statementTimeoutMs: 10_000,
  }).initialize();
  return {
    base: `http://127.0.0.1:${port}`,
    dbUrl: url,
    fixtures: new Fixtures(ds),
    async close() {
      await app.close();
      await ds.destroy();
    },
  };
}

export const OWNER_A = 'worker-a';
export const OWNER_B = 'worker-b';

export function keyFor(payoutId: string): string {
  return `payout-${payoutId}`;
}

export function writeHeaders(
  token: bigint | string,
  owner = OWNER_A,
  key?: string,
): Record<string, string> {
  const h: Record<string, string> = { 'x-fencing-token': String(token), 'x-owner-id': owner };
  if (key !== undefined) h['x-idempotency-key'] = key;
  return h;
}

export type Op = 'claim' | 'post' | 'rail-outcome' | 'resolve' | 'abandon';

/** One protected write with the payout's stable key (or `key`). */
export function write(
  base: string,
  op: Op,
  payoutId: string,
  token: bigint | string,
  body: unknown,
  opts: { owner?: string; key?: string } = {},
): Promise<HttpResult> {
  return http('POST', `${base}/v1/payouts/${payoutId}/${op}`, {
    headers: writeHeaders(token, opts.owner ?? OWNER_A, opts.key ?? keyFor(payoutId)),
    body,
  });
}

export const SUBMISSION_ID = '7d3f8a52-1c4e-4b8f-9a6d-2e5b7c9f0a13';

export const bodies = {
  claim: (expectedState: 'PENDING' | 'CLAIMED' = 'PENDING') => ({ expectedState }),
  submitted: () => ({ outcome: 'SUBMITTED' }),
  acked: (submissionId = SUBMISSION_ID) => ({
    outcome: 'ACKED',
    submissionId,
    railReference: 'rail-ref-1',
  }),
  rejected: () => ({ outcome: 'REJECTED', reason: 'beneficiary closed' }),
  ambiguous: () => ({ outcome: 'AMBIGUOUS' }),
  post: (submissionId = SUBMISSION_ID) => ({
    railReference: 'rail-ref-1',
    submissionId,
    railOutcome: 'ACKED',
  }),
  resolveAcked: () => ({ resolution: 'ACKED', evidence: 'rail lookup: one settled transfer' }),
  resolveNotFound: () => ({
    resolution: 'NOT_FOUND',
    evidence: 'rail lookup: nothing after window',
  }),
  abandon: () => ({ operator: 'ops-alice', reason: 'customer cancelled the payout' }),
};

/** Everything a bad request must leave untouched. */
export async function snapshot(dbUrl: string) {
  return withClient(dbUrl, async (c) => {
    const q = async (sql: string) => (await c.query(sql)).rows;
    return {
      accounts: await q(
        `SELECT account_id, balance_minor, fence, fence_payout_id, version FROM account ORDER BY account_id`,
      ),
      payouts: await q(`SELECT * FROM payout ORDER BY payout_id`),
      ledger: await q(`SELECT entry_id FROM ledger_entry ORDER BY entry_id`),
      transitions: await q(`SELECT count(*)::int AS n FROM payout_transition`),
      idempotency: await q(`SELECT count(*)::int AS n FROM idempotency_record`),
    };
  });
}

/** INV-03 straight from the database: every group sums to zero, every balance equals its entries. */
export async function ledgerInvariants(dbUrl: string) {
  return withClient(dbUrl, async (c) => {
    const groups = await c.query(
      `SELECT txn_group_id FROM ledger_entry GROUP BY txn_group_id HAVING sum(amount_minor) <> 0`,
    );
    const balances = await c.query(
      `SELECT a.account_id FROM account a
         LEFT JOIN ledger_entry e ON e.account_id = a.account_id
        GROUP BY a.account_id, a.balance_minor
       HAVING a.balance_minor <> COALESCE(sum(e.amount_minor), 0)`,
    );
    return { unbalancedGroups: groups.rowCount, wrongBalances: balances.rowCount };
  });
}

/** Forces a payout into a state, for exercising the table from every state (test set-up only). */
export async function forceState(
  dbUrl: string,
  payoutId: string,
  state: string,
  opts: { ambiguousAgoMs?: number; submissionId?: string | null } = {},
) {
  await withClient(dbUrl, (c) =>
    c.query(
      `UPDATE payout SET state = $2,
              ambiguous_at = CASE WHEN $2 = 'RAIL_AMBIGUOUS'
                                  THEN clock_timestamp() - make_interval(secs => $3::double precision / 1000)
                                  ELSE ambiguous_at END,
              submission_id = $4
        WHERE payout_id = $1`,
      [payoutId, state, opts.ambiguousAgoMs ?? 0, opts.submissionId ?? null],
    ),
  );
}
