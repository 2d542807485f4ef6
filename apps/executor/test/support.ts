import path from 'node:path';
import {
  http,
  metricSum,
  migratedDatabase,
  scrapeMetrics,
  seedFundedAccount,
  seedPendingPayout,
  spawnApp,
  waitFor,
  withClient,
  type RunningApp,
  scratchDir,
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
export async function startServices(env: Record<string, string> = {}): Promise<Services> {
  const [lockdb, paydb, proxydb] = await Promise.all([
    migratedDatabase('lockdb'),
    migratedDatabase('paydb'),
    migratedDatabase('proxydb'),
  ]);
  const [lockServer, payments, stub] = await Promise.all([
    spawnApp('lock-server', { ...env, LOCKDB_URL: lockdb, LOCK_BACKEND: 'pg' }),
    spawnApp('payment-resource', { ...env, PAYDB_URL: paydb }),
    startStub(undefined, env),
  ]);
  const proxy = await startProxy(proxydb, stub.url, env);
  const services: Services = {
    lockdb,
    paydb,
    proxydb,
    lockServer,
    payments,
    stub,
    proxy,
    async stop() {
      await Promise.all(
        [lockServer, payments, services.stub, services.proxy].map((app) => app.stop()),
      );
    },
  };
  return services;
}

/** A rail-stub on a fresh journal; `port` to bring one back where the proxy expects it. */
export function startStub(port?: number, env: Record<string, string> = {}): Promise<RunningApp> {
  const journal = path.join(scratchDir('executor-stub-'), 'journal.jsonl');
  return spawnApp(
    'rail-stub',
    { ...env, RAIL_STUB_JOURNAL_PATH: journal, RAIL_STUB_JOURNAL_FSYNC: 'false' },
    port === undefined ? {} : { port },
  );
}

/** Submissions the rail-stub received (GET /admin/stats). */
export async function stubSubmits(stubUrl: string): Promise<number> {
  const res = await http('GET', `${stubUrl}/admin/stats`);
  expect(res.status).toBe(200);
  return (res.body as { submitsReceived: number }).submitsReceived;
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

/** Seeds as the payment-resource fixtures make them (shared with the reconciler tests). */
export const seedAccount = seedFundedAccount;
export const seedPayout = seedPendingPayout;

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

/** Sum of a Prometheus sample over the label set given (0 when absent): libs/testing's scraper. */
export async function metric(
  appUrl: string,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  return metricSum(await scrapeMetrics(appUrl), name, labels);
}

export async function scriptStub(stubUrl: string, patch: Record<string, unknown>): Promise<void> {
  const res = await http('POST', `${stubUrl}/admin/faults`, { body: patch });
  expect(res.status).toBe(200);
}
