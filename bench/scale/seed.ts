import type { Client } from 'pg';

/**
 * History for the scale bench (docs/scale.md), written set-based: each step
 * is one INSERT … SELECT generate_series per batch, never a statement per
 * row. The tables' own triggers run as in production (the audit chains' seals
 * link every row, the ledger's groups balance, the state counts follow), so
 * the history is one the services could have written: a year of settled
 * payouts, their transitions, postings and rail attempts, every chain valid.
 */
export interface SeedSize {
  payouts: number;
  /** Rows per INSERT statement (bounds one statement's memory and time). */
  batch: number;
}

const DAY_S = 86_400;
const YEAR_S = 365 * DAY_S;
/** Customer accounts: one per 100 payouts, at least 100. */
export const accountsFor = (payouts: number) => Math.max(100, Math.floor(payouts / 100));

/** The seed's "now", fixed once, so ids and times computed from it agree across statements. */
const NOW_MS = Date.now();
/** Unix milliseconds of payout `i`'s creation: spread over the past year, the newest a day old. */
const CREATED_MS = (i: string, n: number) =>
  `(${NOW_MS} - (${DAY_S} + (${n} - ${i})::double precision * ${YEAR_S / n}) * 1000)::bigint`;
/** Payout `i`'s creation time: all of it history, none of it live. */
const CREATED = (i: string, n: number) => `to_timestamp(${CREATED_MS(i, n)} / 1000.0)`;
/**
 * The id of the row named by `salt`, made at `ms`: time-ordered, laid out as
 * the services' rowId (libs/persistence/src/row-id.ts) lays out theirs, the
 * random bits drawn from md5 so that every step finds the same id again.
 */
const TIME_ID = (ms: string, salt: string) =>
  `(lpad(to_hex(${ms}), 12, '0') || '7' || substr(md5(${salt}), 1, 3) || '8' || substr(md5(${salt}), 4, 15))::uuid`;
/** The expression of payout `i`'s id (also its rail client ref's suffix). */
const PAYOUT_ID = (i: string, n: number) => TIME_ID(CREATED_MS(i, n), `'payout-' || ${i}`);
/** Its terminal state: 2 % FAILED, 1 % ABANDONED, the rest POSTED. */
const STATE = (i: string) =>
  `CASE WHEN ${i} % 50 = 7 THEN 'FAILED' WHEN ${i} % 100 = 13 THEN 'ABANDONED' ELSE 'POSTED' END`;

async function inBatches(
  c: Client,
  size: SeedSize,
  label: string,
  sql: (from: number, to: number) => string,
): Promise<void> {
  const started = Date.now();
  for (let from = 1; from <= size.payouts; from += size.batch) {
    await c.query(sql(from, Math.min(from + size.batch - 1, size.payouts)));
  }
  console.log(`[bench] seeded ${label} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** Accounts funded by an opening balance each, then payouts, transitions and postings. */
export async function seedPaydb(c: Client, size: SeedSize): Promise<void> {
  const n = size.payouts;
  const accounts = accountsFor(n);
  await seedAccounts(c, accounts);
  await seedPayouts(c, size, accounts);
  await seedTransitions(c, size);
  await seedPostings(c, size);
  // The cached balances, once, from the ledger just written.
  await c.query(`
    UPDATE account a SET balance_minor = s.total, fence = CASE WHEN a.kind = 'CUSTOMER' THEN 1000 + ${n} ELSE 0 END
      FROM (SELECT account_id, sum(amount_minor) AS total FROM ledger_entry GROUP BY account_id) s
     WHERE s.account_id = a.account_id`);
}

/** The funding and clearing accounts, and each customer's opening balance. */
async function seedAccounts(c: Client, accounts: number): Promise<void> {
  await c.query(`
    INSERT INTO account (account_id, kind, currency) VALUES ('funding-EUR', 'FUNDING', 'EUR'),
      ('clearing-EUR', 'CLEARING', 'EUR');
    INSERT INTO account (account_id, kind, currency)
      SELECT 'c-' || a, 'CUSTOMER', 'EUR' FROM generate_series(1, ${accounts}) a;
    INSERT INTO ledger_entry (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, kind, created_at)
      SELECT md5('open-' || a || '-' || leg)::uuid, md5('open-' || a)::uuid,
             CASE leg WHEN 0 THEN 'funding-EUR' ELSE 'c-' || a END,
             CASE leg WHEN 0 THEN -1000000000 ELSE 1000000000 END,
             CASE leg WHEN 0 THEN 'c-' || a ELSE 'funding-EUR' END, 'OPENING_BALANCE',
             now() - interval '400 days'
        FROM generate_series(1, ${accounts}) a, generate_series(0, 1) leg ORDER BY a, leg;`);
}

async function seedPayouts(c: Client, size: SeedSize, accounts: number): Promise<void> {
  const n = size.payouts;
  await inBatches(
    c,
    size,
    'payouts',
    (from, to) => `
    INSERT INTO payout (payout_id, account_id, amount_minor, currency, beneficiary_ref, client_ref,
                        state, attempt_count, created_at, claimed_at, submitted_at, settled_at, updated_at)
    SELECT ${PAYOUT_ID('i', n)}, 'c-' || (i % ${accounts} + 1), 100 + i % 900, 'EUR', 'ben-' || i,
           'po-' || ${PAYOUT_ID('i', n)}::text, ${STATE('i')}, 1, t, t + interval '10 ms',
           t + interval '20 ms', t + interval '2 s', t + interval '2 s'
      FROM generate_series(${from}, ${to}) i, LATERAL (SELECT ${CREATED('i', n)} AS t) x`,
  );
}

/** PENDING → CLAIMED → RAIL_SUBMITTED → the payout's terminal state. */
async function seedTransitions(c: Client, size: SeedSize): Promise<void> {
  const n = size.payouts;
  const steps = [
    ['PENDING', 'CLAIMED', 'CLAIM', '10 ms'],
    ['CLAIMED', 'RAIL_SUBMITTED', 'SUBMIT', '20 ms'],
  ];
  for (const [from, to, event, after] of steps) {
    await inBatches(
      c,
      size,
      `transitions ${to}`,
      (lo, hi) => `
      INSERT INTO payout_transition (payout_id, from_state, to_state, event, actor, token, created_at)
      SELECT p.payout_id, '${from}', '${to}', '${event}', 'bench', 1000 + i, p.created_at + interval '${after}'
        FROM generate_series(${lo}, ${hi}) i JOIN payout p ON p.payout_id = ${PAYOUT_ID('i', n)}
       ORDER BY i`,
    );
  }
  await inBatches(
    c,
    size,
    'transitions terminal',
    (lo, hi) => `
    INSERT INTO payout_transition (payout_id, from_state, to_state, event, actor, token, created_at)
    SELECT p.payout_id, 'RAIL_SUBMITTED', p.state, 'SETTLE', 'bench', 1000 + i, p.settled_at
      FROM generate_series(${lo}, ${hi}) i JOIN payout p ON p.payout_id = ${PAYOUT_ID('i', n)}
     ORDER BY i`,
  );
}

/** The POSTED payouts' ledger groups, and the idempotency records of their claims and posts. */
async function seedPostings(c: Client, size: SeedSize): Promise<void> {
  const n = size.payouts;
  await inBatches(
    c,
    size,
    'postings',
    (lo, hi) => `
    INSERT INTO ledger_entry (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id,
                              payout_id, fence, kind, created_at)
    SELECT ${TIME_ID(`${CREATED_MS('i', n)} + 2000`, `'post-' || i || '-' || leg`)},
           ${TIME_ID(`${CREATED_MS('i', n)} + 2000`, `'post-' || i`)},
           CASE leg WHEN 0 THEN p.account_id ELSE 'clearing-EUR' END,
           CASE leg WHEN 0 THEN -p.amount_minor ELSE p.amount_minor END,
           CASE leg WHEN 0 THEN 'clearing-EUR' ELSE p.account_id END,
           p.payout_id, 1000 + i, 'PAYOUT', p.settled_at
      FROM generate_series(${lo}, ${hi}) i JOIN payout p ON p.payout_id = ${PAYOUT_ID('i', n)},
           generate_series(0, 1) leg
     WHERE p.state = 'POSTED' ORDER BY i, leg`,
  );
  await inBatches(
    c,
    size,
    'idempotency records',
    (lo, hi) => `
    INSERT INTO idempotency_record (operation, idempotency_key, token, request_hash, payout_id,
                                    status_code, response_body, created_at)
    SELECT op, 'payout-' || ${PAYOUT_ID('i', n)}::text, 1000 + i, md5(op || i), ${PAYOUT_ID('i', n)},
           200, '{}', ${CREATED('i', n)}
      FROM generate_series(${lo}, ${hi}) i, unnest(ARRAY['claim', 'post']) op`,
  );
}

/** One rail attempt per payout, with its outcome. */
export async function seedProxydb(c: Client, size: SeedSize): Promise<void> {
  const n = size.payouts;
  const accounts = accountsFor(n);
  await inBatches(
    c,
    size,
    'rail attempts',
    (lo, hi) => `
    INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token, owner_id,
                                 idempotency_key, client_ref, amount_minor, currency, beneficiary_ref,
                                 outcome, rail_reference, error_code, highest_token_seen, created_at, resolved_at)
    SELECT ${TIME_ID(`${CREATED_MS('i', n)} + 20`, `'sub-' || i`)}, ${PAYOUT_ID('i', n)}, 'c-' || (i % ${accounts} + 1), 1000 + i, 'bench',
           'payout-' || ${PAYOUT_ID('i', n)}::text, 'po-' || ${PAYOUT_ID('i', n)}::text, 100 + i % 900, 'EUR',
           'ben-' || i, o.outcome, CASE o.outcome WHEN 'ACKED' THEN 'rr-' || i END,
           CASE o.outcome WHEN 'REJECTED' THEN 'DECLINED' END, 1000 + i,
           t + interval '20 ms', t + interval '1 s'
      FROM generate_series(${lo}, ${hi}) i,
           LATERAL (SELECT ${CREATED('i', n)} AS t) x,
           LATERAL (SELECT CASE WHEN ${STATE('i')} = 'POSTED' THEN 'ACKED' ELSE 'REJECTED' END AS outcome) o
     ORDER BY i`,
  );
  await c.query(`
    INSERT INTO rail_high_water (account_id, highest_token)
    SELECT 'c-' || a, 1000 + ${n} FROM generate_series(1, ${accounts}) a ON CONFLICT DO NOTHING`);
}

/** Revocations: one per thousand payouts. */
export async function seedLockdb(c: Client, size: SeedSize): Promise<void> {
  const revocations = Math.max(10, Math.floor(size.payouts / 1000));
  await c.query(`
    INSERT INTO lock_revocation (revocation_id, lock_key, revoked_token, new_token_floor, operator,
                                 reason, holder_owner_id, holder_session_id, revoked_at)
    SELECT md5('rev-' || r)::uuid, 'payout:c-' || (r % 100 + 1), r, r + 1000, 'bench-operator',
           'scale bench history', 'bench', md5('session-' || r)::uuid,
           now() - make_interval(secs => ${DAY_S} + (${revocations} - r)::double precision * ${YEAR_S / revocations})
      FROM generate_series(1, ${revocations}) r ORDER BY r`);
}
