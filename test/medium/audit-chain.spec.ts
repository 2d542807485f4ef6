import { randomUUID } from 'node:crypto';
import { appendFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Client } from 'pg';
import { railClientRef } from '@dlock/payout-contract';
import {
  migratedDatabase,
  seedFundedAccount,
  seedPendingPayout,
  withClient,
  withTriggersOff,
  type NodeRun,
} from '@dlock/testing';
import { verifyCommand, verifyInProcess } from './support/audit-verify';

/**
 * The audit chains (docs/audit.md) against real PostgreSQL migrated by the
 * real migrations, checked by the verifier of `npm run audit:verify`: in this
 * process for most checks, and as the real command (`dist/`: run
 * `node scripts/build.js` first) where its exit code and output are what is
 * checked, for each of its exits. Each tampering is done the way an intruder
 * with the table owner's rights would: the table's triggers switched off. Each
 * is undone afterwards and the chain verifies clean again.
 */
type Db = 'lockdb' | 'paydb' | 'proxydb';
const URL_VAR: Record<Db, string> = {
  lockdb: 'LOCKDB_URL',
  paydb: 'PAYDB_URL',
  proxydb: 'PROXYDB_URL',
};

function auditVerify(db: Db, url: string, args: string[] = []): Promise<NodeRun> {
  return verifyInProcess({ [URL_VAR[db]]: url }, args);
}

function command(db: Db, url: string, args: string[] = []): Promise<NodeRun> {
  return verifyCommand({ [URL_VAR[db]]: url }, args);
}

/** The verifier's lines naming a break (empty when every chain holds). */
async function breaks(db: Db, url: string): Promise<{ code: number | null; breaks: string[] }> {
  const run = await auditVerify(db, url);
  const lines = run.out.split('\n').filter((l) => l.includes(' BREAK ') || l.includes('could not'));
  return { code: run.code, breaks: lines };
}

async function expectClean(db: Db, url: string): Promise<void> {
  expect(await breaks(db, url)).toEqual({ code: 0, breaks: [] });
}

interface Link {
  id: string;
  seq: string;
  hash: string;
  row: Record<string, unknown>;
}

/** The row at `seq` in the case's seeded partition's chain, as stored. */
async function link(c: Client, k: Case, seq: number): Promise<Link> {
  const hashCol = k.seqCol === 'outcome_seq' ? 'outcome_hash' : 'chain_hash';
  const res = await c.query(
    `SELECT ${k.id}::text AS id, ${k.seqCol}::text AS seq, ${hashCol}::text AS hash, to_jsonb(t) AS row
       FROM ${k.table} t WHERE ${k.partCol}::text = $1 AND ${k.seqCol} = $2`,
    [k.partition, seq],
  );
  expect(res.rows).toHaveLength(1);
  return res.rows[0] as Link;
}

const untriggered = withTriggersOff;

const reinsert = (table: string) =>
  `INSERT INTO ${table} SELECT * FROM jsonb_populate_record(null::${table}, $1::jsonb)`;

interface Case {
  db: Db;
  chain: string;
  table: string;
  id: string;
  seqCol: string;
  partCol: string;
  /** The partition seeded with a four-link chain (set by the seeds). */
  partition: string;
  /** What the seeds leave in the whole chain. */
  partitions: number;
  links: number;
  /** An edit of one content column, and its undo (`$1` the row id, `$2` the old value). */
  column: string;
  edited: string;
  /** How a forged row differs from a copy of the first link, so no unique index refuses it. */
  forge: (row: Record<string, unknown>) => Record<string, unknown>;
}

const CASES: Case[] = [
  {
    db: 'lockdb',
    chain: 'lock_revocation',
    table: 'lock_revocation',
    id: 'revocation_id',
    seqCol: 'chain_seq',
    partCol: 'lock_key',
    partition: 'payout:acct-0',
    partitions: 2,
    links: 5,
    column: 'operator',
    edited: 'someone-else',
    forge: (row) => ({ ...row, revocation_id: randomUUID() }),
  },
  {
    db: 'paydb',
    chain: 'payout_transition',
    table: 'payout_transition',
    id: 'transition_id',
    seqCol: 'chain_seq',
    partCol: 'payout_id',
    partition: '',
    partitions: 2,
    links: 5,
    column: 'actor',
    edited: 'someone-else',
    forge: (row) => ({ ...row, transition_id: 1_000_000 }),
  },
  {
    db: 'paydb',
    chain: 'ledger_entry',
    table: 'ledger_entry',
    id: 'entry_id',
    seqCol: 'chain_seq',
    partCol: 'account_id',
    partition: 'funding-EUR',
    partitions: 5,
    links: 8,
    column: 'amount_minor',
    edited: '-1',
    forge: (row) => ({ ...row, entry_id: randomUUID() }),
  },
  {
    db: 'proxydb',
    chain: 'rail_submission',
    table: 'rail_submission',
    id: 'submission_id',
    seqCol: 'chain_seq',
    partCol: 'payout_id',
    partition: '',
    partitions: 2,
    links: 5,
    column: 'beneficiary_ref',
    edited: 'someone-else',
    forge: (row) => ({
      ...row,
      submission_id: randomUUID(),
      idempotency_key: randomUUID(),
      outcome: null,
      resolved_at: null,
      rail_reference: null,
      error_code: null,
      highest_token_seen: null,
      outcome_seq: null,
      outcome_hash: null,
    }),
  },
  {
    db: 'proxydb',
    chain: 'rail_submission_outcome',
    table: 'rail_submission',
    id: 'submission_id',
    seqCol: 'outcome_seq',
    partCol: 'payout_id',
    partition: '',
    partitions: 2,
    links: 5,
    column: 'rail_reference',
    edited: 'RAIL-FORGED',
    // A resolved row slipped in: its intent link is forged too, so it goes at both heads.
    forge: (row) => ({ ...row, submission_id: randomUUID(), idempotency_key: randomUUID() }),
  },
];

const caseOf = (chain: string) => CASES.find((k) => k.chain === chain)!;

const urls = {} as Record<Db, string>;

async function revoke(c: Client, lockKey: string, token: number, operator = 'oncall') {
  await c.query(
    `INSERT INTO lock_revocation (revocation_id, lock_key, revoked_token, new_token_floor,
       operator, reason, holder_owner_id, holder_session_id)
     VALUES ($1, $2, $3::bigint, $3::bigint + 1, $4, 'stuck holder, paged', 'worker-1', $5)`,
    [randomUUID(), lockKey, token, operator, randomUUID()],
  );
}

/** Four revocations of one lock key, one of another. */
async function seedLockdb(url: string): Promise<void> {
  await withClient(url, async (c) => {
    for (let i = 0; i < 4; i++) await revoke(c, 'payout:acct-0', 10 + i);
    await revoke(c, 'payout:acct-1', 20);
  });
}

/** A payout with four transitions, one with one; four accounts funded from one funding account. */
async function seedPaydb(url: string): Promise<void> {
  const accountId = await seedFundedAccount(url);
  for (let i = 0; i < 3; i++) await seedFundedAccount(url);
  const payoutId = await seedPendingPayout(url, accountId);
  const other = await seedPendingPayout(url, accountId);
  caseOf('payout_transition').partition = payoutId;
  await withClient(url, async (c) => {
    for (const [id, from, to] of [
      [payoutId, 'PENDING', 'CLAIMED'],
      [payoutId, 'CLAIMED', 'RAIL_SUBMITTED'],
      [payoutId, 'RAIL_SUBMITTED', 'RAIL_ACKED'],
      [payoutId, 'RAIL_ACKED', 'POSTED'],
      [other, 'PENDING', 'CLAIMED'],
    ]) {
      await c.query(
        `INSERT INTO payout_transition (payout_id, from_state, to_state, event, actor, token)
         VALUES ($1, $2, $3, 'TEST', 'worker-1', 7)`,
        [id, from, to],
      );
    }
  });
}

/** One attempt, written then resolved (the proxy's intent, then outcome). */
async function attempt(c: Client, payoutId: string, token: number, enforced = false) {
  const submissionId = randomUUID();
  await c.query(
    `INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token, owner_id,
       idempotency_key, client_ref, amount_minor, currency, beneficiary_ref, fencing_enforced)
     VALUES ($1, $2, 'acct-1', $3, 'worker-1', $4, $5, 100, 'EUR', 'ben', $6)`,
    [submissionId, payoutId, token, randomUUID(), railClientRef(payoutId), enforced],
  );
  await c.query(
    `UPDATE rail_submission SET outcome = 'ACKED', rail_reference = $2, resolved_at = now()
      WHERE submission_id = $1`,
    [submissionId, `RAIL-${token}`],
  );
}

/** Four attempts at one payout (not fenced, so several may be live), one at another. */
async function seedProxydb(url: string): Promise<void> {
  const payoutId = randomUUID();
  caseOf('rail_submission').partition = payoutId;
  caseOf('rail_submission_outcome').partition = payoutId;
  await withClient(url, async (c) => {
    for (let i = 0; i < 4; i++) await attempt(c, payoutId, 10 + i);
    await attempt(c, randomUUID(), 20, true);
  });
}

beforeAll(async () => {
  [urls.lockdb, urls.paydb, urls.proxydb] = await Promise.all([
    migratedDatabase('lockdb'),
    migratedDatabase('paydb'),
    migratedDatabase('proxydb'),
  ]);
  await seedLockdb(urls.lockdb);
  await seedPaydb(urls.paydb);
  await seedProxydb(urls.proxydb);
});

const at = (k: Case, row: string, seq: number | string) =>
  `at partition ${k.partition}, row ${row} (seq ${seq})`;

describe('audit chains: every tampering is found, at the right partition and row', () => {
  it('every chain verifies clean as written, and the command names each heads digest', async () => {
    for (const db of ['lockdb', 'paydb', 'proxydb'] as const) {
      const run = await command(db, urls[db]);
      expect({ db, code: run.code }).toEqual({ db, code: 0 });
      for (const k of CASES.filter((x) => x.db === db)) {
        expect(run.out).toMatch(
          new RegExp(
            `\\[audit\\] ${db} ok ${k.chain}: ${k.partitions} partition\\(s\\), ${k.links} link\\(s\\), heads digest [0-9a-f]{64}\\n`,
          ),
        );
      }
    }
  });

  it.each(CASES.map((c) => [c.chain, c] as const))(
    '%s: an edited row breaks its own link',
    async (_, k) => {
      const url = urls[k.db];
      await withClient(url, async (c) => {
        const before = await link(c, k, 2);
        const old = before.row[k.column] as string | number;
        await untriggered(c, k.table, `UPDATE ${k.table} SET ${k.column} = $2 WHERE ${k.id} = $1`, [
          before.id,
          k.edited,
        ]);
        const found = await breaks(k.db, url);
        expect(found.code).toBe(1);
        expect(found.breaks).toEqual([
          expect.stringContaining(
            `[audit] ${k.db} BREAK ${k.chain}: hash_mismatch in ${k.table} ${at(k, before.id, 2)}: expected `,
          ),
        ]);
        const [, expected, stored] = /expected ([0-9a-f]{64}), found ([0-9a-f]{64})$/.exec(
          found.breaks[0],
        )!;
        expect(stored).toBe(before.hash);
        expect(expected).not.toBe(before.hash);
        await untriggered(c, k.table, `UPDATE ${k.table} SET ${k.column} = $2 WHERE ${k.id} = $1`, [
          before.id,
          old,
        ]);
      });
      await expectClean(k.db, url);
    },
  );

  it.each(CASES.map((c) => [c.chain, c] as const))(
    '%s: a removed row leaves a gap at the next link',
    async (_, k) => {
      const url = urls[k.db];
      await withClient(url, async (c) => {
        const removed = await link(c, k, 2);
        const next = await link(c, k, 3);
        if (k.seqCol === 'outcome_seq') {
          // An outcome cannot go without its attempt's row: removing it is un-resolving the attempt.
          await untriggered(
            c,
            k.table,
            `UPDATE ${k.table} SET outcome = NULL, rail_reference = NULL, resolved_at = NULL,
             outcome_seq = NULL, outcome_hash = NULL WHERE ${k.id} = $1`,
            [removed.id],
          );
        } else {
          await untriggered(c, k.table, `DELETE FROM ${k.table} WHERE ${k.id} = $1`, [removed.id]);
        }
        const gap = (chain: string) =>
          `[audit] ${k.db} BREAK ${chain}: sequence_gap in ${k.table} ${at(k, next.id, 3)}: expected seq 2, found seq 3`;
        // Removing an attempt's row removes its outcome's link too (seeded in the same order).
        const chains =
          k.chain === 'rail_submission' ? [k.chain, 'rail_submission_outcome'] : [k.chain];
        expect(await breaks(k.db, url)).toEqual({ code: 1, breaks: chains.map(gap) });
        if (k.seqCol === 'outcome_seq') {
          await untriggered(c, k.table, `DELETE FROM ${k.table} WHERE ${k.id} = $1`, [removed.id]);
        }
        await untriggered(c, k.table, reinsert(k.table), [JSON.stringify(removed.row)]);
      });
      await expectClean(k.db, url);
    },
  );

  it.each(CASES.map((c) => [c.chain, c] as const))(
    '%s: a slipped-in row breaks at that row',
    async (_, k) => {
      const url = urls[k.db];
      await withClient(url, async (c) => {
        const first = await link(c, k, 1);
        // A forger who knows the scheme but cannot recompute: it reuses a real link's hash.
        const forged: Record<string, unknown> = { ...k.forge(first.row), chain_seq: 5 };
        if (k.seqCol === 'outcome_seq') forged.outcome_seq = 5;
        const forgedId = String(forged[k.id]);
        await untriggered(c, k.table, reinsert(k.table), [JSON.stringify(forged)]);
        const found = await breaks(k.db, url);
        expect(found.code).toBe(1);
        expect(found.breaks).toContainEqual(
          expect.stringMatching(
            new RegExp(
              `^\\[audit\\] ${k.db} BREAK ${k.chain}: hash_mismatch in ${k.table} ${at(k, forgedId, 5).replace(/[()]/g, '\\$&')}: expected [0-9a-f]{64}, found [0-9a-f]{64}$`,
            ),
          ),
        );
        await untriggered(c, k.table, `DELETE FROM ${k.table} WHERE ${k.id} = $1`, [forged[k.id]]);
      });
      await expectClean(k.db, url);
    },
  );

  it('payout_transition: a payout past PENDING whose whole chain was deleted is found', async () => {
    const k = caseOf('payout_transition');
    await withClient(urls.paydb, async (c) => {
      const rows = await c.query(
        `SELECT to_jsonb(t) AS row FROM payout_transition t WHERE payout_id = $1 ORDER BY chain_seq`,
        [k.partition],
      );
      const setState = (state: string) =>
        untriggered(c, 'payout', `UPDATE payout SET state = $2 WHERE payout_id = $1`, [
          k.partition,
          state,
        ]);
      await setState('POSTED');
      await expectClean('paydb', urls.paydb);
      await untriggered(c, k.table, `DELETE FROM payout_transition WHERE payout_id = $1`, [
        k.partition,
      ]);
      expect(await breaks('paydb', urls.paydb)).toEqual({
        code: 1,
        breaks: [
          `[audit] paydb BREAK payout_transition: uncovered_partition in payout_transition at partition ${k.partition}, its end: expected a chain ending in POSTED, found no transition`,
        ],
      });
      for (const r of rows.rows as { row: unknown }[]) {
        await untriggered(c, k.table, reinsert(k.table), [JSON.stringify(r.row)]);
      }
      await expectClean('paydb', urls.paydb);
      await setState('PENDING');
    });
    await expectClean('paydb', urls.paydb);
  });

  it('a rewritten, shortened or deleted partition chain is found against a recorded heads digest (--anchor)', async () => {
    const heads = path.join(os.tmpdir(), `audit-heads-${randomUUID()}.tsv`);
    const recorded = await command('lockdb', urls.lockdb, ['--heads', heads]);
    const digest =
      /ok lock_revocation: 2 partition\(s\), 5 link\(s\), heads digest ([0-9a-f]{64})/.exec(
        recorded.out,
      )![1];
    const anchor = ['--anchor', `lock_revocation=${digest}`, '--anchor-heads', heads];
    expect(await auditVerify('lockdb', urls.lockdb, anchor)).toEqual({
      code: 0,
      out: recorded.out,
    });
    const k = caseOf('lock_revocation');
    const expectAnchored = async (line: string) => {
      // Without the anchor each change looks like a shorter (or different), intact chain...
      await expectClean('lockdb', urls.lockdb);
      // ...with it, it is a break.
      const run = await auditVerify('lockdb', urls.lockdb, anchor);
      expect(run.code).toBe(1);
      expect(run.out).toContain(`[audit] lockdb BREAK lock_revocation: ${line}`);
    };
    await withClient(urls.lockdb, async (c) => {
      const last = await link(c, k, 4);
      const removeLast = () =>
        untriggered(c, k.table, `DELETE FROM lock_revocation WHERE revocation_id = $1`, [last.id]);
      await removeLast();
      await expectAnchored(
        `truncated in lock_revocation at partition ${k.partition}, its end: expected a link at seq 4, found last seq 3`,
      );
      // A rewrite that recomputes every hash (here: the seal itself).
      await revoke(c, k.partition, 90, 'intruder');
      const rewritten = await link(c, k, 4);
      await expectAnchored(
        `anchor_mismatch in lock_revocation ${at(k, rewritten.id, 4)}: expected ${last.hash}, found ${rewritten.hash}`,
      );
      await untriggered(c, k.table, `DELETE FROM lock_revocation WHERE revocation_id = $1`, [
        rewritten.id,
      ]);
      await untriggered(c, k.table, reinsert(k.table), [JSON.stringify(last.row)]);
      // A partition's whole chain deleted.
      const other = await c.query(
        `SELECT to_jsonb(t) AS row FROM lock_revocation t WHERE lock_key = 'payout:acct-1'`,
      );
      await untriggered(c, k.table, `DELETE FROM lock_revocation WHERE lock_key = 'payout:acct-1'`);
      await expectAnchored(
        `truncated in lock_revocation at partition payout:acct-1, its end: expected a link at seq 1, found no chain`,
      );
      await untriggered(c, k.table, reinsert(k.table), [
        JSON.stringify((other.rows[0] as { row: unknown }).row),
      ]);
    });
    expect((await auditVerify('lockdb', urls.lockdb, anchor)).code).toBe(0);
    await expectClean('lockdb', urls.lockdb);
    // A head list that does not hash to the recorded digest is refused: it proves nothing.
    await appendFile(heads, `lock_revocation\tpayout:acct-7\t1\t${'0'.repeat(64)}\n`);
    const forged = await command('lockdb', urls.lockdb, anchor);
    expect(forged.code).toBe(2);
    expect(forged.out).toContain('the lock_revocation heads do not hash to the recorded digest');
    await rm(heads);
  });

  it('lists every break of a chain tampered in several places, bounded by --breaks-max', async () => {
    const k = caseOf('lock_revocation');
    await withClient(urls.lockdb, async (c) => {
      const edited = await link(c, k, 2);
      const removed = await link(c, k, 3);
      const after = await link(c, k, 4);
      const other = await c.query(
        `SELECT revocation_id::text AS id, to_jsonb(t) AS row FROM lock_revocation t
          WHERE lock_key = 'payout:acct-1' AND chain_seq = 1`,
      );
      const otherId = (other.rows[0] as { id: string }).id;
      const setOperator = (id: string, operator: string) =>
        untriggered(
          c,
          k.table,
          `UPDATE lock_revocation SET operator = $2 WHERE revocation_id = $1`,
          [id, operator],
        );
      try {
        await setOperator(edited.id, 'intruder');
        await untriggered(c, k.table, `DELETE FROM lock_revocation WHERE revocation_id = $1`, [
          removed.id,
        ]);
        await setOperator(otherId, 'intruder');
        const hash = '[0-9a-f]{64}';
        const line = (rest: string) => `^\\[audit\\] lockdb BREAK lock_revocation: ${rest}$`;
        const expected = [
          line(
            `hash_mismatch in lock_revocation at partition payout:acct-0, row ${edited.id} \\(seq 2\\): expected ${hash}, found ${edited.hash}`,
          ),
          line(
            `sequence_gap in lock_revocation at partition payout:acct-0, row ${after.id} \\(seq 4\\): expected seq 3, found seq 4`,
          ),
          line(
            `hash_mismatch in lock_revocation at partition payout:acct-1, row ${otherId} \\(seq 1\\): expected ${hash}, found ${hash}`,
          ),
        ];
        // Every break, in walk order, each named once; then the chain's counts.
        const all = await command('lockdb', urls.lockdb);
        expect(all.code).toBe(1);
        const listed = all.out.split('\n').filter((l) => l.includes(' BREAK '));
        expect(listed).toEqual(expected.map((e) => expect.stringMatching(new RegExp(e))));
        expect(all.out).toContain(
          '[audit] lockdb broken lock_revocation: 3 break(s); 2 partition(s), 1 link(s) hold\n',
        );
        // Bounded: the first two, then how many more.
        const bounded = await auditVerify('lockdb', urls.lockdb, ['--breaks-max', '2']);
        expect(bounded.code).toBe(1);
        expect(bounded.out.split('\n').filter((l) => l.includes(' BREAK '))).toEqual([
          expect.stringMatching(new RegExp(expected[0])),
          expect.stringMatching(new RegExp(expected[1])),
          '[audit] lockdb BREAK lock_revocation: and 1 more break(s) not listed (--breaks-max 2)',
        ]);
        const refused = await command('lockdb', urls.lockdb, ['--breaks-max', '0']);
        expect(refused.code).toBe(2);
        expect(refused.out).toContain('--breaks-max <1..10000>');
      } finally {
        await setOperator(edited.id, edited.row.operator as string);
        await setOperator(otherId, (other.rows[0] as { row: { operator: string } }).row.operator);
        await untriggered(c, k.table, reinsert(k.table), [JSON.stringify(removed.row)]);
      }
    });
    await expectClean('lockdb', urls.lockdb);
  });

  it('refuses a malformed anchor, and says so (exit 2, nothing verified)', async () => {
    const run = await auditVerify('lockdb', urls.lockdb, ['--anchor', 'lock_revocation=xyz']);
    expect(run.code).toBe(2);
    expect(run.out).toContain(
      'expected --heads <file>, --anchor-heads <file>, --anchor <chain>=<64 hex>',
    );
    const alone = await auditVerify('lockdb', urls.lockdb, [
      '--anchor',
      `lock_revocation=${'a'.repeat(64)}`,
    ]);
    expect(alone.code).toBe(2);
    expect(alone.out).toContain('--anchor needs --anchor-heads <file>');
  });
});

/**
 * Holds one transaction open after `first`, runs `second` to its commit in
 * another (with a lock wait bound), then commits the first: `second` can only
 * succeed if nothing it locks is held by `first`.
 */
async function withoutWaiting(
  url: string,
  first: (c: Client) => Promise<unknown>,
  second: (c: Client) => Promise<unknown>,
): Promise<void> {
  await withClient(url, async (a) => {
    await a.query('BEGIN');
    await first(a);
    await withClient(url, async (b) => {
      await b.query('BEGIN');
      await b.query(`SET LOCAL lock_timeout = '20s'`);
      await second(b);
      await b.query('COMMIT');
    });
    await a.query('COMMIT');
  });
}

describe('audit chains under concurrent writers', () => {
  const WRITERS = 8;
  const ROUNDS = 10;

  it('paydb: concurrent payouts and deposits on one account, in the services’ lock order, keep every chain valid and never deadlock', async () => {
    const paydb = await migratedDatabase('paydb');
    const accountId = await seedFundedAccount(paydb); // 1 link each: the account, funding-EUR
    const payoutId = await seedPendingPayout(paydb, accountId);
    await withClient(paydb, (c) =>
      c.query(
        `INSERT INTO account (account_id, kind, currency) VALUES ('clearing-EUR', 'CLEARING', 'EUR')`,
      ),
    );
    const movement = (c: Client, from: string, to: string) =>
      c.query(
        `INSERT INTO ledger_entry (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, kind)
         VALUES ($1, $3, $4, -5, $5, 'OPENING_BALANCE'), ($2, $3, $5, 5, $4, 'OPENING_BALANCE')`,
        [randomUUID(), randomUUID(), randomUUID(), from, to],
      );
    // As payment-resource posts a payout: the account's fence first, then the payout, then the legs.
    const payout = async (c: Client, w: number) => {
      await c.query(`SELECT 1 FROM account WHERE account_id = $1 FOR NO KEY UPDATE`, [accountId]);
      await c.query(
        `INSERT INTO payout_transition (payout_id, from_state, to_state, event, actor, token)
         VALUES ($1, 'PENDING', 'CLAIMED', 'TEST', 'writer', 7)`,
        [payoutId],
      );
      // The legs in either order.
      if (w % 4 === 0) await movement(c, accountId, 'clearing-EUR');
      else await movement(c, 'clearing-EUR', accountId);
    };
    // As a deposit: only the legs, the funding account's first.
    const deposit = (c: Client) => movement(c, 'funding-EUR', accountId);
    await Promise.all(
      Array.from({ length: WRITERS }, (_, w) =>
        withClient(paydb, async (c) => {
          for (let i = 0; i < ROUNDS; i++) {
            await c.query('BEGIN');
            if (w % 2 === 0) await payout(c, w);
            else await deposit(c);
            await c.query('COMMIT');
          }
        }),
      ),
    );
    const run = await auditVerify('paydb', paydb);
    expect(run.code).toBe(0);
    const n = WRITERS * ROUNDS;
    expect(run.out).toMatch(
      new RegExp(`ok payout_transition: 1 partition\\(s\\), ${n / 2} link\\(s\\), heads digest`),
    );
    expect(run.out).toMatch(
      new RegExp(`ok ledger_entry: 3 partition\\(s\\), ${2 * n + 2} link\\(s\\), heads digest`),
    );
  });

  it('paydb: writers on different payouts and accounts do not wait for each other', async () => {
    const paydb = await migratedDatabase('paydb');
    const [a1, a2] = [await seedFundedAccount(paydb), await seedFundedAccount(paydb)];
    const [b1, b2] = [await seedFundedAccount(paydb), await seedFundedAccount(paydb)];
    const [p1, p2] = [await seedPendingPayout(paydb, a1), await seedPendingPayout(paydb, a2)];
    const write = (payoutId: string, from: string, to: string) => async (c: Client) => {
      await c.query(
        `INSERT INTO payout_transition (payout_id, from_state, to_state, event, actor, token)
         VALUES ($1, 'PENDING', 'CLAIMED', 'TEST', 'writer', 7)`,
        [payoutId],
      );
      await c.query(
        `INSERT INTO ledger_entry (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, kind)
         VALUES ($1, $3, $4, -5, $5, 'OPENING_BALANCE'), ($2, $3, $5, 5, $4, 'OPENING_BALANCE')`,
        [randomUUID(), randomUUID(), randomUUID(), from, to],
      );
    };
    await withoutWaiting(paydb, write(p1, a1, b1), write(p2, a2, b2));
    await expectClean('paydb', paydb);
  });

  it('proxydb and lockdb: writers on different payouts and lock keys do not wait for each other', async () => {
    const proxydb = await migratedDatabase('proxydb');
    await withoutWaiting(
      proxydb,
      (c) => attempt(c, randomUUID(), 1),
      (c) => attempt(c, randomUUID(), 2),
    );
    await expectClean('proxydb', proxydb);
    const lockdb = await migratedDatabase('lockdb');
    await withoutWaiting(
      lockdb,
      (c) => revoke(c, 'payout:acct-a', 1),
      (c) => revoke(c, 'payout:acct-b', 2),
    );
    await expectClean('lockdb', lockdb);
  });

  it('proxydb: concurrent intents and outcomes on shared payouts keep both chains valid', async () => {
    const proxydb = await migratedDatabase('proxydb');
    const payouts = [randomUUID(), randomUUID()];
    await Promise.all(
      Array.from({ length: WRITERS }, (_, w) =>
        withClient(proxydb, async (c) => {
          for (let i = 0; i < ROUNDS; i++) await attempt(c, payouts[i % 2], w * ROUNDS + i + 1);
        }),
      ),
    );
    const run = await auditVerify('proxydb', proxydb);
    expect(run.code).toBe(0);
    const n = WRITERS * ROUNDS;
    for (const chain of ['rail_submission', 'rail_submission_outcome']) {
      expect(run.out).toMatch(
        new RegExp(`ok ${chain}: 2 partition\\(s\\), ${n} link\\(s\\), heads digest`),
      );
    }
  });
});
