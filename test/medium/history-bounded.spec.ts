import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Client } from 'pg';
import { Client as PgClient } from 'pg';
import {
  migratedDatabase,
  seedFundedAccount,
  seedPendingPayout,
  withClient,
  withTriggersOff,
  type NodeRun,
} from '@dlock/testing';
import { PayoutRepository } from '../../apps/payment-resource/src/payouts/persistence/payout.repository';
import { verifyCommand, verifyInProcess } from './support/audit-verify';

/**
 * Reads that cost the live work, not the history (docs/scale.md), against real
 * PostgreSQL migrated by the real migrations: the maintained per-state counts
 * the console's statistics read, and the audit chains' checkpoints
 * (`npm run audit:verify -- --checkpoint`): its verifier in this process, and
 * the real command (from `dist/`: build first) for a first checkpoint file
 * and a break found from one.
 */

/** count(*) by state, the way the statistics read used to answer. */
async function countedByState(c: Client): Promise<Record<string, number>> {
  const res = await c.query<{ state: string; n: number }>(
    `SELECT state, count(*)::int AS n FROM payout GROUP BY state`,
  );
  return Object.fromEntries(res.rows.map((r) => [r.state, r.n]));
}

/** What the statistics read answers by state (and folds the deltas in, as each poll does). */
async function statsByState(c: Client): Promise<Record<string, number>> {
  // A manager whose connection is `c` (sqlRows runs on a manager's own connection): each poll on its own.
  const onThisConnection = { queryRunner: { connect: () => Promise.resolve(c) } };
  const row = await new PayoutRepository().stats(onThisConnection as never, 3600, 60);
  return row.by_state;
}

const move = (c: Client, ids: string[], state: string) =>
  c.query(`UPDATE payout SET state = $2 WHERE payout_id = ANY($1::uuid[])`, [ids, state]);

describe('payout counts are maintained, not counted', () => {
  it('match count(*) by state after a mix of inserts, transitions, rollbacks and polls', async () => {
    const paydb = await migratedDatabase('paydb');
    const account = await seedFundedAccount(paydb);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await seedPendingPayout(paydb, account));
    await withClient(paydb, async (c) => {
      expect(await statsByState(c)).toEqual({ PENDING: 12 });
      await move(c, ids.slice(0, 8), 'CLAIMED');
      await move(c, ids.slice(0, 6), 'RAIL_SUBMITTED');
      // A write that leaves the state as it is counts nothing.
      await c.query(`UPDATE payout SET attempt_count = attempt_count + 1`);
      await move(c, ids.slice(6, 8), 'PENDING');
      expect(await statsByState(c)).toEqual(await countedByState(c));
      await move(c, ids.slice(0, 3), 'POSTED');
      await move(c, ids.slice(3, 4), 'RAIL_AMBIGUOUS');
      await move(c, ids.slice(4, 5), 'FAILED');
      // A transition rolled back leaves no delta behind.
      await c.query('BEGIN');
      await move(c, ids.slice(8, 12), 'ABANDONED');
      await c.query('ROLLBACK');
      // Deltas folded by one poll and written after it are both counted by the next.
      expect(await statsByState(c)).toEqual(await countedByState(c));
      await move(c, ids.slice(3, 4), 'POSTED');
      await c.query(`DELETE FROM payout WHERE payout_id = $1`, [ids[11]]);
      const expected = await countedByState(c);
      expect(expected).toEqual({
        PENDING: 5,
        RAIL_SUBMITTED: 1,
        POSTED: 4,
        FAILED: 1,
      });
      expect(await statsByState(c)).toEqual(expected);
      // Every delta is folded in: the next poll reads the counts alone.
      expect((await c.query(`SELECT count(*)::int AS n FROM payout_state_delta`)).rows).toEqual([
        { n: 0 },
      ]);
      expect(await statsByState(c)).toEqual(expected);
    });
  });

  it('two polls at once fold each delta once and both answer the exact counts', async () => {
    const paydb = await migratedDatabase('paydb');
    const account = await seedFundedAccount(paydb);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await seedPendingPayout(paydb, account));
    const clients = [
      new PgClient({ connectionString: paydb }),
      new PgClient({ connectionString: paydb }),
    ];
    await Promise.all(clients.map((c) => c.connect()));
    try {
      await move(clients[0], ids.slice(0, 10), 'CLAIMED');
      const expected = await countedByState(clients[0]);
      const answers = await Promise.all(clients.map((c) => statsByState(c)));
      expect(answers).toEqual([expected, expected]);
      expect(await statsByState(clients[0])).toEqual(expected);
    } finally {
      await Promise.all(clients.map((c) => c.end()));
    }
  });
});

function auditVerify(paydb: string, args: string[]): Promise<NodeRun> {
  return verifyInProcess({ PAYDB_URL: paydb }, args);
}

function command(paydb: string, args: string[]): Promise<NodeRun> {
  return verifyCommand({ PAYDB_URL: paydb }, args);
}

const breaksOf = (run: NodeRun) => run.out.split('\n').filter((l) => l.includes(' BREAK '));

/** Two transitions of a payout, appended to its chain by the seal. */
async function transitions(c: Client, payoutId: string): Promise<void> {
  for (const [from, to] of [
    ['PENDING', 'CLAIMED'],
    ['CLAIMED', 'RAIL_SUBMITTED'],
  ]) {
    await c.query(
      `INSERT INTO payout_transition (payout_id, from_state, to_state, event, actor, token)
       VALUES ($1, $2, $3, 'test', 'history-bounded', 7)`,
      [payoutId, from, to],
    );
    await c.query(`UPDATE payout SET state = $2 WHERE payout_id = $1`, [payoutId, to]);
  }
}

describe('audit chains verified from a checkpoint', () => {
  // Two steps run the real command, a new node process: slow on a shared machine.
  jest.setTimeout(300_000);
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'dlock-checkpoint-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('verifies only what was appended since, finds a tampered row after the checkpoint, and leaves one before it to the full walk', async () => {
    const paydb = await migratedDatabase('paydb');
    const account = await seedFundedAccount(paydb);
    const early = await seedPendingPayout(paydb, account);
    const late = await seedPendingPayout(paydb, account);
    const file = path.join(dir, 'paydb.json');
    const checkpointed = ['--checkpoint', file, '--settle-ms', '0'];
    await withClient(paydb, (c) => transitions(c, early));

    const first = await command(paydb, checkpointed);
    expect({ code: first.code, breaks: breaksOf(first) }).toEqual({ code: 0, breaks: [] });
    expect(first.out).toContain(
      'ok payout_transition: checkpointed, 2 new link(s), 2 link(s) in all',
    );
    expect(first.out).toContain('ok ledger_entry: checkpointed, 2 new link(s), 2 link(s) in all');

    // Nothing appended: nothing re-read.
    const idle = await auditVerify(paydb, checkpointed);
    expect(idle.out).toContain(
      'ok payout_transition: checkpointed, 0 new link(s), 2 link(s) in all',
    );

    // A row before the checkpoint edited (its stored hash kept): the checkpointed pass
    // does not re-read it; the full walk finds it.
    await withClient(paydb, (c) =>
      withTriggersOff(
        c,
        'payout_transition',
        `UPDATE payout_transition SET actor = 'someone-else' WHERE payout_id = $1 AND chain_seq = 1`,
        [early],
      ),
    );
    await withClient(paydb, (c) => transitions(c, late));
    const after = await auditVerify(paydb, checkpointed);
    expect({ code: after.code, breaks: breaksOf(after) }).toEqual({ code: 0, breaks: [] });
    expect(after.out).toContain(
      'ok payout_transition: checkpointed, 2 new link(s), 4 link(s) in all',
    );
    const full = await auditVerify(paydb, []);
    expect(full.code).toBe(1);
    expect(breaksOf(full)).toEqual([
      expect.stringMatching(
        new RegExp(
          `payout_transition: hash_mismatch in payout_transition at partition ${early}, row \\d+ \\(seq 1\\)`,
        ),
      ),
    ]);

    // A row appended after the checkpoint and then edited: the checkpointed pass finds it,
    // and its checkpoint stays before it.
    await withClient(paydb, async (c) => {
      await c.query(
        `INSERT INTO payout_transition (payout_id, from_state, to_state, event, actor, token)
         VALUES ($1, 'RAIL_SUBMITTED', 'RAIL_ACKED', 'test', 'history-bounded', 7)`,
        [late],
      );
      await c.query(`UPDATE payout SET state = 'RAIL_ACKED' WHERE payout_id = $1`, [late]);
      await withTriggersOff(
        c,
        'payout_transition',
        `UPDATE payout_transition SET reason = 'forged' WHERE payout_id = $1 AND chain_seq = 3`,
        [late],
      );
    });
    for (let run = 0; run < 2; run++) {
      const found = await auditVerify(paydb, checkpointed);
      expect(found.code).toBe(1);
      expect(breaksOf(found)).toEqual([
        expect.stringMatching(
          new RegExp(
            `payout_transition: hash_mismatch in payout_transition at partition ${late}, row \\d+ \\(seq 3\\)`,
          ),
        ),
      ]);
    }
  });

  it('a checkpointed pass leaves a row younger than its settle time for later, and finds its checkpoint link removed', async () => {
    const paydb = await migratedDatabase('paydb');
    const account = await seedFundedAccount(paydb);
    const payout = await seedPendingPayout(paydb, account);
    const file = path.join(dir, 'gaps.json');
    await withClient(paydb, (c) => transitions(c, payout));
    // Settled an hour from now: nothing is verified yet, and nothing is skipped either.
    const waiting = await auditVerify(paydb, ['--checkpoint', file, '--settle-ms', '3600000']);
    expect(waiting.out).toContain(
      'ok payout_transition: checkpointed, 0 new link(s), 0 link(s) in all',
    );
    const now = await auditVerify(paydb, ['--checkpoint', file, '--settle-ms', '0']);
    expect(now.out).toContain(
      'ok payout_transition: checkpointed, 2 new link(s), 2 link(s) in all',
    );

    await withClient(paydb, (c) =>
      withTriggersOff(
        c,
        'payout_transition',
        `DELETE FROM payout_transition WHERE payout_id = $1 AND chain_seq = 2`,
        [payout],
      ),
    );
    const gone = await command(paydb, ['--checkpoint', file, '--settle-ms', '0']);
    expect(gone.code).toBe(1);
    expect(breaksOf(gone)).toEqual([
      expect.stringMatching(
        /payout_transition: truncated in payout_transition at partition .*\(seq 2\): expected seq 2 hash [0-9a-f]{64}, found no such row$/,
      ),
    ]);
  });
});
