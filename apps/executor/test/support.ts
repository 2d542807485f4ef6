import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  http,
  migratedDatabase,
  spawnApp,
  waitFor,
  withClient,
  type RunningApp,
} from '@dlock/testing';

/** Short timeouts everywhere: the proxy gives the rail 800 ms, the executor mirrors it. */
export const RAIL_READ_TIMEOUT_MS = 800;

export interface Services {
  lockdb: string;
  paydb: string;
  proxydb: string;
  lockServer: RunningApp;
  payments: RunningApp;
  stub: RunningApp;
  proxy: RunningApp;
  stop(): Promise<void>;
}

/** lock-server (pg), payment-resource, rail-stub and rail-proxy as real processes on fresh databases. */
export async function startServices(): Promise<Services> {
  const [lockdb, paydb, proxydb] = await Promise.all([
    migratedDatabase('lockdb'),
    migratedDatabase('paydb'),
    migratedDatabase('proxydb'),
  ]);
  const journal = path.join(mkdtempSync(path.join(tmpdir(), 'executor-stub-')), 'journal.jsonl');
  const [lockServer, payments, stub] = await Promise.all([
    spawnApp('lock-server', { LOCKDB_URL: lockdb, LOCK_BACKEND: 'pg' }),
    spawnApp('payment-resource', { PAYDB_URL: paydb }),
    spawnApp('rail-stub', { RAIL_STUB_JOURNAL_PATH: journal, RAIL_STUB_JOURNAL_FSYNC: 'false' }),
  ]);
  const proxy = await startProxy(proxydb, stub.url);
  const services: Services = {
    lockdb,
    paydb,
    proxydb,
    lockServer,
    payments,
    stub,
    proxy,
    async stop() {
      await Promise.all([lockServer, payments, stub, services.proxy].map((app) => app.stop()));
    },
  };
  return services;
}

export function startProxy(
  proxydb: string,
  stubUrl: string,
  env: Record<string, string> = {},
): Promise<RunningApp> {
  return spawnApp('rail-proxy', {
    PROXYDB_URL: proxydb,
    RAIL_STUB_URL: stubUrl,
    RAIL_CONNECT_TIMEOUT_MS: '500',
    RAIL_READ_TIMEOUT_MS: String(RAIL_READ_TIMEOUT_MS),
    ...env,
  });
}

/** An executor process against the services; short session TTL so a dead worker's lock frees fast. */
export function startExecutor(
  s: Services,
  ownerId: string,
  env: Record<string, string> = {},
): Promise<RunningApp> {
  return spawnApp('executor', {
    OWNER_ID: ownerId,
    LOCK_SERVER_URL: s.lockServer.url,
    PAYMENT_RESOURCE_URL: s.payments.url,
    RAIL_PROXY_URL: s.proxy.url,
    LOCK_SESSION_TTL_MS: '3000',
    LOCK_DEFAULT_TTL_MS: '10000',
    RAIL_READ_TIMEOUT_MS: String(RAIL_READ_TIMEOUT_MS),
    EXECUTOR_POLL_INTERVAL_MS: '100',
    EXECUTOR_RECOVERY_INTERVAL_MS: '300',
    EXECUTOR_CONCURRENCY: '4',
    ...env,
  });
}

/**
 * A customer account with an opening balance, exactly as the payment-resource
 * fixtures make one: a balanced OPENING_BALANCE pair from the funding account.
 */
export async function seedAccount(paydb: string, balanceMinor = 1_000_000): Promise<string> {
  const accountId = `acct-${randomUUID().slice(0, 8)}`;
  await withClient(paydb, async (c) => {
    await c.query('BEGIN');
    await c.query(
      `INSERT INTO account (account_id, kind, currency) VALUES ('funding-EUR', 'FUNDING', 'EUR')
       ON CONFLICT DO NOTHING`,
    );
    await c.query(
      `INSERT INTO account (account_id, kind, currency) VALUES ($1, 'CUSTOMER', 'EUR')`,
      [accountId],
    );
    const group = randomUUID();
    await c.query(
      `INSERT INTO ledger_entry (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, kind)
       VALUES ($1, $3, 'funding-EUR', -$4::bigint, $2, 'OPENING_BALANCE'),
              ($5, $3, $2, $4::bigint, 'funding-EUR', 'OPENING_BALANCE')`,
      [randomUUID(), accountId, group, balanceMinor, randomUUID()],
    );
    await c.query(
      `UPDATE account SET balance_minor = balance_minor - $1 WHERE account_id = 'funding-EUR'`,
      [balanceMinor],
    );
    await c.query(`UPDATE account SET balance_minor = balance_minor + $1 WHERE account_id = $2`, [
      balanceMinor,
      accountId,
    ]);
    await c.query('COMMIT');
  });
  return accountId;
}

/** A PENDING payout as the fixtures make one (client_ref derived from the id). */
export async function seedPayout(
  paydb: string,
  accountId: string,
  amountMinor = 1_000,
): Promise<string> {
  const payoutId = randomUUID();
  await withClient(paydb, (c) =>
    c.query(
      `INSERT INTO payout (payout_id, account_id, amount_minor, currency, beneficiary_ref, client_ref)
       VALUES ($1, $2, $3, 'EUR', $4, $5)`,
      [payoutId, accountId, amountMinor, `ben-${payoutId.slice(0, 8)}`, `po-${payoutId}`],
    ),
  );
  return payoutId;
}

export async function payoutState(paydb: string, payoutId: string): Promise<string> {
  const rows = await withClient(paydb, (c) =>
    c.query<{ state: string }>(`SELECT state FROM payout WHERE payout_id = $1`, [payoutId]),
  );
  return rows.rows[0].state;
}

export function waitForState(
  paydb: string,
  payoutId: string,
  states: string[],
  timeoutMs = 20_000,
): Promise<string> {
  return waitFor(
    async () => {
      const state = await payoutState(paydb, payoutId);
      return states.includes(state) ? state : null;
    },
    timeoutMs,
    `payout ${payoutId} to reach ${states.join('|')}`,
  );
}

export async function ledgerRows(paydb: string, payoutId: string): Promise<number> {
  const res = await withClient(paydb, (c) =>
    c.query<{ n: string }>(`SELECT count(*) AS n FROM ledger_entry WHERE payout_id = $1`, [
      payoutId,
    ]),
  );
  return Number(res.rows[0].n);
}

export interface SubmissionRow {
  outcome: string | null;
  presented_token: string;
  owner_id: string;
}

export async function submissions(proxydb: string, payoutId: string): Promise<SubmissionRow[]> {
  const res = await withClient(proxydb, (c) =>
    c.query<SubmissionRow>(
      `SELECT outcome, presented_token, owner_id FROM rail_submission WHERE payout_id = $1 ORDER BY created_at`,
      [payoutId],
    ),
  );
  return res.rows;
}

export async function lockHeld(lockServerUrl: string, accountId: string): Promise<boolean> {
  const res = await http('GET', `${lockServerUrl}/v1/locks/payout:${accountId}`);
  if (res.status === 404) return false;
  expect(res.status).toBe(200);
  return (res.body as { held: boolean }).held;
}

/** Sum of a Prometheus sample over the label set given (0 when absent). */
export async function metric(
  appUrl: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const res = await http('GET', `${appUrl}/metrics`);
  expect(res.status).toBe(200);
  let total = 0;
  for (const line of String(res.text).split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const set = m[2] ?? '';
    if (Object.entries(labels).every(([k, v]) => set.includes(`${k}="${v}"`)))
      total += Number(m[3]);
  }
  return total;
}

export async function scriptStub(stubUrl: string, patch: Record<string, unknown>): Promise<void> {
  const res = await http('POST', `${stubUrl}/admin/faults`, { body: patch });
  expect(res.status).toBe(200);
}
