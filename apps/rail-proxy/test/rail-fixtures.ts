import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { UUID_PATTERN } from '@dlock/lock-api';
import {
  http,
  spawnApp,
  withClient,
  type HttpResult,
  type RunningApp,
  scratchDir,
} from '@dlock/testing';

/** Shared fixtures for the rail-proxy medium tests (real stub, real proxy, real proxydb). */
export const ISO = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
export const UUID = expect.stringMatching(UUID_PATTERN);
export const TRACE = expect.stringMatching(/^[0-9a-f]{32}$/);

export function journalPath(): string {
  return path.join(scratchDir('rail-stub-'), 'journal.jsonl');
}

export function startStub(env: Record<string, string> = {}): Promise<RunningApp> {
  return spawnApp('rail-stub', {
    RAIL_STUB_JOURNAL_PATH: journalPath(),
    RAIL_STUB_JOURNAL_FSYNC: 'false',
    ...env,
  });
}

export function startProxy(
  proxydbUrl: string,
  railUrl: string,
  env: Record<string, string> = {},
): Promise<RunningApp> {
  return spawnApp('rail-proxy', {
    PROXYDB_URL: proxydbUrl,
    RAIL_STUB_URL: railUrl,
    RAIL_CONNECT_TIMEOUT_MS: '500',
    RAIL_READ_TIMEOUT_MS: '500',
    ...env,
  });
}

export interface Payout {
  payoutId: string;
  accountId: string;
  amountMinor: number;
  currency: string;
  beneficiaryRef: string;
}

export function newPayout(accountId = `acct-${randomUUID().slice(0, 8)}`): Payout {
  return {
    payoutId: randomUUID(),
    accountId,
    amountMinor: 12_345,
    currency: 'EUR',
    beneficiaryRef: 'ben-synthetic-1',
  };
}

/** The payout's stable idempotency key, as the executor derives it. */
export function keyOf(p: Payout): string {
  return `payout-${p.payoutId}`;
}

export function submit(
  proxyUrl: string,
  payout: Payout,
  token: string,
  opts: { ownerId?: string; key?: string; body?: Record<string, unknown> } = {},
): Promise<HttpResult> {
  return http('POST', `${proxyUrl}/v1/rail/submissions`, {
    headers: {
      'x-fencing-token': token,
      'x-owner-id': opts.ownerId ?? 'worker-1',
      'x-idempotency-key': opts.key ?? keyOf(payout),
    },
    body: opts.body ?? payout,
  });
}

export interface StubStats {
  submitsReceived: number;
  transfersAccepted: number;
}

export async function stubStats(stubUrl: string): Promise<StubStats> {
  const res = await http('GET', `${stubUrl}/admin/stats`);
  expect(res.status).toBe(200);
  return res.body as StubStats;
}

export async function scriptStub(
  stubUrl: string,
  script: string[],
  extra: Record<string, unknown> = {},
): Promise<void> {
  const res = await http('POST', `${stubUrl}/admin/faults`, { body: { script, ...extra } });
  expect(res.status).toBe(200);
}

export interface Transfer {
  railReference: string;
  clientRef: string;
  amountMinor: number;
  currency: string;
  acceptedAt: string;
  settled: boolean;
  settledAt: string | null;
  duplicateOf: string | null;
}

export async function transfersFor(stubUrl: string, clientRef: string): Promise<Transfer[]> {
  const res = await http('GET', `${stubUrl}/lookup?clientRef=${encodeURIComponent(clientRef)}`);
  expect(res.status).toBe(200);
  return (res.body as { transfers: Transfer[] }).transfers;
}

export interface Row {
  submission_id: string;
  payout_id: string;
  account_id: string;
  presented_token: string;
  client_ref: string;
  outcome: string | null;
  rail_reference: string | null;
  error_code: string | null;
  highest_token_seen: string | null;
  fencing_enforced: boolean;
  resolved_at: Date | null;
  /** The X-Grant-Proof the attempt was admitted on (docs/rail.md, "proxydb schema"). */
  grant_proof: string | null;
  grant_proof_kept: boolean;
}

/** The claims of a kept grant proof, decoded (not verified: the reconciler's job). */
export function keptGrant(row: Row): Record<string, unknown> {
  const payload = (row.grant_proof ?? '').split('.')[1] ?? '';
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8') || 'null');
}

export function rowsOf(dbUrl: string, payoutId: string): Promise<Row[]> {
  return withClient(dbUrl, async (c) => {
    const res = await c.query<Row>(
      `SELECT * FROM rail_submission WHERE payout_id = $1 ORDER BY created_at`,
      [payoutId],
    );
    return res.rows;
  });
}

export function highWater(dbUrl: string, accountId: string): Promise<string | null> {
  return withClient(dbUrl, async (c) => {
    const res = await c.query<{ highest_token: string }>(
      `SELECT highest_token FROM rail_high_water WHERE account_id = $1`,
      [accountId],
    );
    return res.rows[0]?.highest_token ?? null;
  });
}

export function idempotencyRows(dbUrl: string, key: string): Promise<number> {
  return withClient(dbUrl, async (c) => {
    const res = await c.query(`SELECT 1 FROM rail_idempotency WHERE idempotency_key = $1`, [key]);
    return res.rowCount ?? 0;
  });
}
