import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from 'pg';
import { withClient } from '@dlock/testing';
import { OWNER_A } from './support';

/**
 * What the fast-path specs share (docs/payment-resource.md, "The one-statement
 * fast path"): the statements sent, lock waits, and the rows a write touches.
 */

/**
 * The statements payment-resource sends to the database while `fn` runs, hooked
 * on the `pg` client as bench/e2e/sql-recorder.cjs does (one statement is one
 * round trip: nothing is pipelined).
 */
export async function statementsDuring<T>(
  dbUrl: string,
  fn: () => Promise<T>,
): Promise<{ result: T; statements: string[] }> {
  const database = new URL(dbUrl).pathname.slice(1);
  const statements: string[] = [];
  const original = Client.prototype.query;
  const hooked = function (this: Client, config: unknown, ...rest: unknown[]) {
    const params = (this as unknown as { connectionParameters: Record<string, unknown> })
      .connectionParameters;
    if (params.database === database && params.application_name === 'payment-resource') {
      const text = typeof config === 'string' ? config : (config as { text?: string } | null)?.text;
      if (text !== undefined) statements.push(text.replace(/\s+/g, ' ').trim());
    }
    return (original as (...args: unknown[]) => unknown).apply(this, [config, ...rest]);
  };
  Client.prototype.query = hooked as typeof original;
  try {
    return { result: await fn(), statements };
  } finally {
    Client.prototype.query = original;
  }
}

/** Waits until `count` payment-resource statements wait for a row lock; answers the first one's text. */
export async function lockWaiter(dbUrl: string, count = 1): Promise<string> {
  return withClient(dbUrl, async (c) => {
    for (let i = 0; i < 500; i++) {
      const rows = await c.query<{ query: string }>(
        `SELECT query FROM pg_stat_activity
          WHERE datname = current_database() AND application_name = 'payment-resource'
            AND wait_event_type = 'Lock'`,
      );
      if (rows.rows.length >= count) return rows.rows[0].query;
      await sleep(10);
    }
    throw new Error('no payment-resource statement ever waited for a lock');
  });
}

/**
 * Runs `during` while another transaction holds the account's row lock, then
 * ends that transaction with `release`.
 */
export async function withAccountLocked(
  dbUrl: string,
  accountId: string,
  during: (holder: Client) => Promise<void>,
  release: 'COMMIT' | 'ROLLBACK',
): Promise<void> {
  await withClient(dbUrl, async (holder) => {
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM account WHERE account_id = $1 FOR UPDATE', [accountId]);
    try {
      await during(holder);
    } finally {
      await holder.query(release);
    }
  });
}

export async function accountRow(dbUrl: string, accountId: string) {
  return withClient(dbUrl, async (c) => {
    const rows = await c.query<{ fence: string; fence_payout_id: string | null; version: number }>(
      `SELECT fence, fence_payout_id, version FROM account WHERE account_id = $1`,
      [accountId],
    );
    return rows.rows[0];
  });
}

export async function payoutRows(dbUrl: string, payoutId: string) {
  return withClient(dbUrl, async (c) => {
    const q = async (sql: string) => (await c.query(sql, [payoutId])).rows;
    return {
      payout: await q(`SELECT * FROM payout WHERE payout_id = $1`),
      transitions: await q(`SELECT * FROM payout_transition WHERE payout_id = $1`),
      answers: await q(`SELECT * FROM idempotency_record WHERE payout_id = $1`),
    };
  });
}

/** The 409 FENCED_OUT envelope a fenced write of OWNER_A answers on `accountId`. */
export function fencedOutEnvelope(accountId: string, presented: string, highest: string) {
  return {
    code: 'FENCED_OUT',
    message: expect.any(String),
    retrySafe: false,
    details: {
      presentedToken: presented,
      highestToken: highest,
      resourceType: 'account',
      resourceId: accountId,
      ownerId: OWNER_A,
    },
    traceId: expect.any(String),
  };
}
