import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Client } from 'pg';
import { railClientRef } from '@dlock/lock-api';
import {
  REPO_ROOT,
  migratedDatabase,
  seedFundedAccount,
  seedPendingPayout,
  withClient,
  withTriggersOff,
} from '@dlock/testing';

/**
 * The audit chains (docs/audit.md) against real PostgreSQL migrated by the
 * real migrations, checked by the real command (`npm run audit:verify`, from
 * `dist/`: run `node scripts/build.js` first). Each tampering is done the way
 * an intruder with the table owner's rights would: the table's triggers
 * switched off. Each is undone afterwards and the chain verifies clean again.
 */
type Db = 'lockdb' | 'paydb' | 'proxydb';
const URL_VAR: Record<Db, string> = {
  lockdb: 'LOCKDB_URL',
  paydb: 'PAYDB_URL',
  proxydb: 'PROXYDB_URL',
};

function auditVerify(
  db: Db,
  url: string,
  args: string[] = [],
): Promise<{ code: number | null; out: string }> {
  const script = path.join(REPO_ROOT, 'dist', 'scripts', 'audit-verify.js');
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [script, ...args], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', [URL_VAR[db]]: url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const timer = setTimeout(() => proc.kill('SIGKILL'), 60_000);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
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

/** The row at `seq` in a chain, as stored. */
async function link(
  c: Client,
  table: string,
  id: string,
  seqCol: string,
  seq: number,
): Promise<Link> {
  const hashCol = seqCol === 'outcome_seq' ? 'outcome_hash' : 'chain_hash';
  const res = await c.query(
    `SELECT ${id}::text AS id, ${seqCol}::text AS seq, ${hashCol}::text AS hash, to_jsonb(t) AS row
       FROM ${table} t WHERE ${seqCol} = $1`,
    [seq],
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
    column: 'beneficiary_ref',
    edited: 'someone-else',
    forge: (row) => ({
      ...row,
      submission_id: randomUUID(),
      payout_id: randomUUID(),
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
    column: 'rail_reference',
    edited: 'RAIL-FORGED',
    // A resolved row slipped in: its intent link is forged too, so it goes at both heads.
    forge: (row) => ({ ...row, submission_id: randomUUID(), payout_id: randomUUID() }),
  },
];

const urls = {} as Record<Db, string>;

async function seedLockdb(url: string): Promise<void> {
  await withClient(url, async (c) => {
    for (let i = 0; i < 4; i++) {
      await c.query(
        `INSERT INTO lock_revocation (revocation_id, lock_key, revoked_token, new_token_floor,
           operator, reason, holder_owner_id, holder_session_id)
         VALUES ($1, $2, $3::bigint, $3::bigint + 1, 'oncall', 'stuck holder, paged', 'worker-1', $4)`,
        [randomUUID(), `payout:acct-${i}`, 10 + i, randomUUID()],
      );
    }
  });
}

async function seedPaydb(url: string): Promise<void> {
  const accountId = await seedFundedAccount(url); // two ledger links
  await seedFundedAccount(url); // two more
  const payoutId = await seedPendingPayout(url, accountId);
  await withClient(url, async (c) => {
    for (const [from, to] of [
      ['PENDING', 'CLAIMED'],
      ['CLAIMED', 'RAIL_SUBMITTED'],
      ['RAIL_SUBMITTED', 'RAIL_ACKED'],
      ['RAIL_ACKED', 'POSTED'],
    ]) {
      await c.query(
        `INSERT INTO payout_transition (payout_id, from_state, to_state, event, actor, token)
         VALUES ($1, $2, $3, 'TEST', 'worker-1', 7)`,
        [payoutId, from, to],
      );
    }
  });
}

/** Four attempts, each resolved after it was written (the proxy's intent, then outcome). */
async function seedProxydb(url: string): Promise<void> {
  await withClient(url, async (c) => {
    for (let i = 0; i < 4; i++) {
      const submissionId = randomUUID();
      const payoutId = randomUUID();
      await c.query(
        `INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token, owner_id,
           idempotency_key, client_ref, amount_minor, currency, beneficiary_ref)
         VALUES ($1, $2, 'acct-1', $3, 'worker-1', $4, $5, 100, 'EUR', 'ben')`,
        [submissionId, payoutId, 10 + i, `payout-${payoutId}`, railClientRef(payoutId)],
      );
      await c.query(
        `UPDATE rail_submission SET outcome = 'ACKED', rail_reference = $2, resolved_at = now()
          WHERE submission_id = $1`,
        [submissionId, `RAIL-${i}`],
      );
    }
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

describe('audit chains: every tampering is found, at the right row', () => {
  it('every chain verifies clean as written, and the command names each head', async () => {
    for (const db of ['lockdb', 'paydb', 'proxydb'] as const) {
      const run = await auditVerify(db, urls[db]);
      expect({ db, code: run.code }).toEqual({ db, code: 0 });
      for (const c of CASES.filter((x) => x.db === db)) {
        expect(run.out).toMatch(
          new RegExp(`\\[audit\\] ${db} ok ${c.chain}: 4 link\\(s\\), head 4:[0-9a-f]{64}\\n`),
        );
      }
    }
  });

  it.each(CASES.map((c) => [c.chain, c] as const))(
    '%s: an edited row breaks its own link',
    async (_, k) => {
      const url = urls[k.db];
      await withClient(url, async (c) => {
        const before = await link(c, k.table, k.id, k.seqCol, 2);
        const old = before.row[k.column] as string | number;
        await untriggered(c, k.table, `UPDATE ${k.table} SET ${k.column} = $2 WHERE ${k.id} = $1`, [
          before.id,
          k.edited,
        ]);
        const found = await breaks(k.db, url);
        expect(found.code).toBe(1);
        expect(found.breaks).toEqual([
          expect.stringContaining(
            `[audit] ${k.db} BREAK ${k.chain}: hash_mismatch in ${k.table} at row ${before.id} (seq 2): expected `,
          ),
        ]);
        const [, expected, stored] =
          /expected ([0-9a-f]{64}), found ([0-9a-f]{64}) \(1 link\(s\) before it hold\)$/.exec(
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
        const removed = await link(c, k.table, k.id, k.seqCol, 2);
        const next = await link(c, k.table, k.id, k.seqCol, 3);
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
          `[audit] ${k.db} BREAK ${chain}: sequence_gap in ${k.table} at row ${next.id} (seq 3): expected seq 2, found seq 3 (1 link(s) before it hold)`;
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
        const first = await link(c, k.table, k.id, k.seqCol, 1);
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
              `^\\[audit\\] ${k.db} BREAK ${k.chain}: hash_mismatch in ${k.table} at row ${forgedId} \\(seq 5\\): expected [0-9a-f]{64}, found [0-9a-f]{64} \\(4 link\\(s\\) before it hold\\)$`,
            ),
          ),
        );
        await untriggered(c, k.table, `DELETE FROM ${k.table} WHERE ${k.id} = $1`, [forged[k.id]]);
      });
      await expectClean(k.db, url);
    },
  );

  it('a recomputed rewrite or a removed tail is found against a recorded head (--anchor)', async () => {
    const run = await auditVerify('lockdb', urls.lockdb);
    const head = /ok lock_revocation: 4 link\(s\), head (4:[0-9a-f]{64})/.exec(run.out)![1];
    const anchor = ['--anchor', `lock_revocation=${head}`];
    expect((await auditVerify('lockdb', urls.lockdb, anchor)).code).toBe(0);
    await withClient(urls.lockdb, async (c) => {
      const last = await link(c, 'lock_revocation', 'revocation_id', 'chain_seq', 4);
      await untriggered(c, 'lock_revocation', `DELETE FROM lock_revocation WHERE chain_seq = 4`);
      // Without the anchor a removed tail looks like a shorter, intact chain...
      expect(await breaks('lockdb', urls.lockdb)).toEqual({ code: 0, breaks: [] });
      // ...with it, it is a break.
      const truncated = await auditVerify('lockdb', urls.lockdb, anchor);
      expect(truncated.code).toBe(1);
      expect(truncated.out).toContain(
        '[audit] lockdb BREAK lock_revocation: truncated in lock_revocation at its end: expected a link at seq 4, found last seq 3',
      );
      // A rewrite that recomputes every hash (here: the seal itself) verifies clean on its own...
      await c.query(
        `INSERT INTO lock_revocation (revocation_id, lock_key, revoked_token, new_token_floor,
           operator, reason, holder_owner_id, holder_session_id)
         VALUES ($1, 'payout:acct-9', 90, 91, 'intruder', 'covering tracks', 'worker-9', $2)`,
        [randomUUID(), randomUUID()],
      );
      expect(await breaks('lockdb', urls.lockdb)).toEqual({ code: 0, breaks: [] });
      const rewritten = await link(c, 'lock_revocation', 'revocation_id', 'chain_seq', 4);
      // ...but not against the head recorded before it.
      const mismatch = await auditVerify('lockdb', urls.lockdb, anchor);
      expect(mismatch.code).toBe(1);
      expect(mismatch.out).toContain(
        `[audit] lockdb BREAK lock_revocation: anchor_mismatch in lock_revocation at row ${rewritten.id} (seq 4): expected ${head.slice(2)}, found ${rewritten.hash}`,
      );
      await untriggered(c, 'lock_revocation', `DELETE FROM lock_revocation WHERE chain_seq = 4`);
      await untriggered(c, 'lock_revocation', reinsert('lock_revocation'), [
        JSON.stringify(last.row),
      ]);
    });
    expect((await auditVerify('lockdb', urls.lockdb, anchor)).code).toBe(0);
    await expectClean('lockdb', urls.lockdb);
  });

  it('refuses a malformed anchor, and says so (exit 2, nothing verified)', async () => {
    const run = await auditVerify('lockdb', urls.lockdb, ['--anchor', 'lock_revocation=4:xyz']);
    expect(run.code).toBe(2);
    expect(run.out).toContain('expected --anchor <chain>=<seq>:<64 hex>');
  });
});

describe('audit chains under concurrent writers', () => {
  const WRITERS = 8;
  const ROUNDS = 10;

  it('paydb: concurrent transactions appending to both chains, in either order, keep one valid chain each', async () => {
    const paydb = await migratedDatabase('paydb');
    const accountId = await seedFundedAccount(paydb); // 2 ledger links
    const payoutId = await seedPendingPayout(paydb, accountId);
    const transition = (c: Client) =>
      c.query(
        `INSERT INTO payout_transition (payout_id, from_state, to_state, event, actor, token)
         VALUES ($1, 'PENDING', 'CLAIMED', 'TEST', 'writer', 7)`,
        [payoutId],
      );
    const legs = (c: Client) =>
      c.query(
        `INSERT INTO ledger_entry (entry_id, txn_group_id, account_id, amount_minor, counterparty_account_id, kind)
         VALUES ($1, $3, 'funding-EUR', -5, $2, 'OPENING_BALANCE'), ($4, $3, $2, 5, 'funding-EUR', 'OPENING_BALANCE')`,
        [randomUUID(), accountId, randomUUID(), randomUUID()],
      );
    await Promise.all(
      Array.from({ length: WRITERS }, (_, w) =>
        withClient(paydb, async (c) => {
          for (let i = 0; i < ROUNDS; i++) {
            await c.query('BEGIN');
            // Half the writers append the ledger first: one lock per database, so no deadlock.
            if (w % 2 === 0) {
              await transition(c);
              await legs(c);
            } else {
              await legs(c);
              await transition(c);
            }
            await c.query('COMMIT');
          }
        }),
      ),
    );
    const run = await auditVerify('paydb', paydb);
    expect(run.code).toBe(0);
    const n = WRITERS * ROUNDS;
    expect(run.out).toMatch(new RegExp(`ok payout_transition: ${n} link\\(s\\), head ${n}:`));
    expect(run.out).toMatch(
      new RegExp(`ok ledger_entry: ${2 * n + 2} link\\(s\\), head ${2 * n + 2}:`),
    );
  });

  it('proxydb: concurrent intents and outcomes keep both chains valid', async () => {
    const proxydb = await migratedDatabase('proxydb');
    await Promise.all(
      Array.from({ length: WRITERS }, (_, w) =>
        withClient(proxydb, async (c) => {
          for (let i = 0; i < ROUNDS; i++) {
            const submissionId = randomUUID();
            const payoutId = randomUUID();
            await c.query(
              `INSERT INTO rail_submission (submission_id, payout_id, account_id, presented_token, owner_id,
                 idempotency_key, client_ref, amount_minor, currency, beneficiary_ref)
               VALUES ($1, $2, 'acct-1', $3, 'worker', $4, $5, 100, 'EUR', 'ben')`,
              [
                submissionId,
                payoutId,
                w * ROUNDS + i + 1,
                `payout-${payoutId}`,
                railClientRef(payoutId),
              ],
            );
            await c.query(
              `UPDATE rail_submission SET outcome = 'ACKED', rail_reference = 'RAIL', resolved_at = now()
                WHERE submission_id = $1`,
              [submissionId],
            );
          }
        }),
      ),
    );
    const run = await auditVerify('proxydb', proxydb);
    expect(run.code).toBe(0);
    const n = WRITERS * ROUNDS;
    expect(run.out).toMatch(new RegExp(`ok rail_submission: ${n} link\\(s\\), head ${n}:`));
    expect(run.out).toMatch(new RegExp(`ok rail_submission_outcome: ${n} link\\(s\\), head ${n}:`));
  });
});
