import { addPayouts, createFixture } from '../payout.fixture';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitForStates } from './scenario.support';
import type { DlockSystem } from '../dlock-system.infra';
import { Evidence, type Scenario, type ScenarioContext } from './scenario.types';

/**
 * UC-07: the lock backend fails over while payouts flow.
 * - the lock-server process is SIGKILLed and started again;
 * - PostgreSQL itself is restarted (pg backend, when the harness owns the server);
 * - in a three-member etcd cluster the leader is SIGKILLed and a new one elected.
 * Every payout still ends POSTED exactly once, and every token granted after a
 * failure is larger than every token granted before it (INV-04, checked on
 * the recorded history).
 */
export const uc07: Scenario = {
  id: 'UC-07',
  title: 'backend failover: lock-server restart, PostgreSQL restart, etcd leader kill',
  async run(ctx) {
    const { sys, scale } = ctx;
    const ev = new Evidence();
    const perAccount = scale === 'short' ? 3 : 8;
    const fx = await createFixture(sys.paydbUrl, {
      prefix: 'uc07',
      accounts: 2,
      payoutsPerAccount: perAccount,
    });
    const worker = await sys.startExecutor('uc07-w1');
    const ids = [...fx.payoutIds];
    const failover: Failover = {
      ctx,
      ev,
      boundaries: [],
      // Fresh work after every fault, so grants must be made across the boundary.
      more: async () => {
        ids.push(...(await addPayouts(sys.paydbUrl, fx.accountIds, perAccount, 500)));
      },
    };
    try {
      await sleep(400);
      for (const step of [restartLockServer, restartPostgres, killEtcdLeader]) await step(failover);
      const states = await waitForStates(
        sys,
        ids,
        (s) => s === 'POSTED',
        60_000,
        'payouts to finish after failover',
      );
      ev.set('posted', [...states.values()].filter((s) => s === 'POSTED').length);
    } finally {
      await worker.stop();
    }
    expectTokensIncrease(sys, ev, failover.boundaries);
    ev.set('lockCallsCutOff', sys.recorder.upstreamFailures);
    return ev.outcome();
  },
};

/** The run's faults so far, and how to add work after each. */
interface Failover {
  ctx: ScenarioContext;
  ev: Evidence;
  /** When each fault began, for the token comparison across it. */
  boundaries: Array<{ what: string; at: number }>;
  more: () => Promise<void>;
}

/** 1. lock-server SIGKILL + restart on the same port. */
async function restartLockServer({ ctx: { sys, log }, ev, boundaries, more }: Failover) {
  boundaries.push({ what: 'lock-server restart', at: performance.now() });
  await sys.lockServer.kill();
  await sleep(800);
  await sys.lockServer.restart();
  log('UC-07: lock-server restarted');
  await more();
  ev.set('lockServerStarts', sys.lockServer.starts);
  ev.expect(sys.lockServer.starts >= 2, 'the lock-server really restarted');
}

/** 2. PostgreSQL restart (only a server the harness owns). */
async function restartPostgres({ ctx: { sys, pg, log }, ev, boundaries, more }: Failover) {
  if (sys.opts.backend === 'pg' && pg.canRestart) {
    await sleep(500);
    boundaries.push({ what: 'postgres restart', at: performance.now() });
    await pg.restart(1_500);
    log('UC-07: PostgreSQL restarted');
    await more();
    ev.set('postgresRestarted', true);
  } else if (sys.opts.backend === 'pg') {
    ev.set(
      'postgresRestarted',
      'skipped: the shared test server cannot be restarted (the CLI does it)',
    );
  }
}

/** 3. etcd leader kill in a three-member cluster. */
async function killEtcdLeader({ ctx: { sys, log }, ev, boundaries, more }: Failover) {
  if (!sys.etcd || sys.etcd.members.length < 3) return;
  await sleep(500);
  const leader = await sys.etcd.leader();
  boundaries.push({ what: 'etcd leader kill', at: performance.now() });
  await leader.kill();
  const next = await sys.etcd.waitForLeader(10_000);
  ev.set('etcdLeader', { killed: leader.name, elected: next.name });
  ev.expect(next.name !== leader.name, 'a different etcd member became leader');
  log(`UC-07: etcd leader ${leader.name} killed, ${next.name} elected`);
  await more();
}

/** Tokens across every boundary: all grants requested after it are above all grants answered before it. */
function expectTokensIncrease(
  sys: DlockSystem,
  ev: Evidence,
  boundaries: Failover['boundaries'],
): void {
  for (const b of boundaries) {
    const before = sys.recorder.grants.filter((g) => g.grantedAt < b.at).map((g) => g.token);
    const after = sys.recorder.grants.filter((g) => g.requestAt > b.at).map((g) => g.token);
    const maxBefore = before.reduce((m, t) => (t > m ? t : m), 0n);
    const minAfter = after.reduce<bigint | null>((m, t) => (m === null || t < m ? t : m), null);
    ev.set(`tokens@${b.what}`, {
      maxBefore: maxBefore.toString(),
      minAfter: minAfter?.toString() ?? null,
      grantsAfter: after.length,
    });
    ev.expect(after.length > 0, `grants continued after the ${b.what}`);
    ev.expect(
      minAfter === null || minAfter > maxBefore,
      `tokens kept increasing across the ${b.what}`,
    );
  }
}
