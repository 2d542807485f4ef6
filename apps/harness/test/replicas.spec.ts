import { isTerminalPayoutState } from '@dlock/payout-contract';
import { summarize } from '../src/checkers/invariants.checker';
import { linearizabilityLine } from '../src/checkers/linearizability';
import { addPayouts, createFixture } from '../src/payout.fixture';
import { withPg } from '../src/infra/postgres.infra';
import { checkLockHistory, checkSystem, type Harness } from '../src/scenario.runner';
import { waitForStates } from '../src/scenarios/scenario.support';
import {
  soakOn,
  soakViolations,
  startSoakHarness,
  type SoakOptions,
} from '../src/soak/soak.runner';
import { log, removeWorkDir, testPg, testWorkDir } from './support';

/**
 * Several lock-server replicas on one backend (docs/harness.md, "Replicas"):
 * a short soak whose nemesis kills, cuts and skews replicas, then, on the same
 * system, executors bound round-robin, each replica with its own recorder, and
 * the checkers judging the merged history. One system for both: a second would
 * only add a boot. The soak goes first, so its counts are its own.
 */
describe('three lock-server replicas on pg', () => {
  const workDir = testWorkDir('replica-soak');
  const lines: string[] = [];
  const soak: SoakOptions = {
    // Seed 36 draws a clock skew, then a replica cut from its database (partitions on).
    seed: 36,
    minutes: 0.6,
    backend: 'pg',
    pg: testPg(),
    workDir,
    replicas: 3,
    nemesis: 'all',
    log: (m) => {
      lines.push(m);
      log(m);
    },
  };
  let h: Harness;
  beforeAll(async () => {
    h = await startSoakHarness(soak);
  }, 120_000);
  afterAll(async () => {
    await h?.stop();
    removeWorkDir(workDir);
  }, 60_000);

  it('a short soak (--replicas 3 --nemesis all) applies replica faults and every check holds', async () => {
    const result = await soakOn(h, soak);
    log(JSON.stringify({ faults: result.faults, replicas: result.replicas }));
    expect(result.replicas.map((r) => r.name)).toEqual([
      'lock-server-0',
      'lock-server-1',
      'lock-server-2',
    ]);
    // The shared test PostgreSQL cannot restart: left out, and said so.
    expect(result.nemesis.leftOut.map((l) => l.kind)).toContain('postgres-restart');
    expect(lines.some((l) => l.startsWith('nemesis leaves out postgres-restart'))).toBe(true);
    const replicaFaults = result.faults.filter(
      (f) =>
        f.kind === 'lock-replica-kill' ||
        f.kind === 'lock-replica-partition' ||
        (f.kind === 'clock-skew' && f.what.startsWith('lock-server')),
    );
    expect(replicaFaults.length).toBeGreaterThan(0);
    // The faults bit: some replica answered 5xx or not at all while one was in force.
    expect(result.replicas.some((r) => r.errors > 0)).toBe(true);
    expect(result.faults.filter((f) => f.failed)).toEqual([]);
    expect(summarize(result.invariants)).toEqual([]);
    expect(linearizabilityLine(result.linearizability)).toMatch(/^linearizability: ok/);
    expect(soakViolations(result)).toBe(0);
    expect(result.payoutsByState.POSTED).toBeGreaterThan(0);
  }, 240_000);

  it('payouts through every replica, one killed and restarted: the merged history is clean', async () => {
    const { sys } = h;
    // The soak's grants and restarts came first: this test counts its own.
    const grantsBefore = sys.lockReplicas.map((r) => r.recorder.grants.length);
    const fx = await createFixture(sys.paydbUrl, {
      prefix: 'repl',
      accounts: 3,
      payoutsPerAccount: 3,
    });
    // One account each: every executor, so every replica it is bound to, has locks to take.
    await Promise.all(
      fx.accountIds.map((account, i) =>
        sys.startExecutor(`repl-w${i + 1}`, { EXECUTOR_ACCOUNT_ID: account }),
      ),
    );
    await waitForStates(sys, fx.payoutIds, isTerminalPayoutState, 45_000, 'first wave');

    const victim = sys.lockReplicas[1];
    const startsBefore = victim.server.starts;
    await victim.server.kill();
    const late = await addPayouts(sys.paydbUrl, fx.accountIds, 1, 777);
    await victim.server.restart();
    await waitForStates(sys, late, isTerminalPayoutState, 45_000, 'after the kill');
    await sys.stopExecutors();

    // Every replica granted: the merged history really spans three recorders.
    expect(sys.lockReplicas.map((r, i) => r.recorder.grants.length > grantsBefore[i])).toEqual([
      true,
      true,
      true,
    ]);
    expect(victim.server.starts).toBe(startsBefore + 1);
    const history = sys.lockHistory();
    expect(history.grants.length).toBe(
      sys.lockReplicas.reduce((n, r) => n + r.recorder.grants.length, 0),
    );
    await h.ctx.watch.trySample();
    const invariants = await checkSystem(sys, h.ctx.watch);
    expect(summarize(invariants)).toEqual([]);
    const ids = [...fx.payoutIds, ...late];
    const posted = await withPg(sys.paydbUrl, (c) =>
      c.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM payout WHERE payout_id = ANY($1) AND state = 'POSTED'`,
        [ids],
      ),
    );
    expect(posted.rows[0].n).toBe(ids.length);
    const lin = await checkLockHistory(sys);
    expect(linearizabilityLine(lin)).toMatch(/^linearizability: ok/);
  }, 150_000);
});
