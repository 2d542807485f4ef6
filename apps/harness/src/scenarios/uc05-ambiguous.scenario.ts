import { createFixture } from '../payout.fixture';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  railTransfers,
  setStubFaults,
  stubStats,
  submissionsOf,
  transitionsOf,
  waitForStates,
} from './scenario.support';
import type { DlockSystem } from '../dlock-system.infra';
import { Evidence, type Scenario } from './scenario.types';

/**
 * UC-05 / flow D: two submits whose outcome the proxy cannot know. P1: the
 * rail books the transfer and then holds the connection past the proxy's read
 * timeout (money moved). P2: the proxy→rail network blackholes the request
 * (money did not move). Both end RAIL_AMBIGUOUS with exactly one TIMEOUT row
 * and are never submitted again; the reconciler then resolves P1 to POSTED and
 * P2 to FAILED from the rail's lookup, after the settlement window.
 */
export const uc05: Scenario = {
  id: 'UC-05',
  title: 'ambiguous rail outcome: quarantined, then reconciled both ways',
  async run({ sys }) {
    const ev = new Evidence();
    const fx = await createFixture(sys.paydbUrl, {
      prefix: 'uc05',
      accounts: 2,
      payoutsPerAccount: 1,
    });
    const [p1, p2] = fx.payoutIds;
    const holdsBefore = (await stubStats(sys)).failures?.hold ?? 0;
    await submitUnknowable(sys, fx.accountIds, p1, p2);
    for (const [name, id] of [
      ['P1', p1],
      ['P2', p2],
    ]) {
      const path = (await transitionsOf(sys, id)).map((t) => t.to);
      const subs = await submissionsOf(sys, id);
      ev.set(
        `${name}.submissions`,
        subs.map((s) => s.outcome),
      );
      ev.expect(
        path.includes('RAIL_AMBIGUOUS'),
        `${name} went through RAIL_AMBIGUOUS (${path.join('→')})`,
      );
      ev.expect(
        subs.length === 1 && subs[0].outcome === 'TIMEOUT',
        `${name} has exactly one TIMEOUT submission`,
      );
    }
    ev.set('stubHolds', ((await stubStats(sys)).failures?.hold ?? 0) - holdsBefore);
    await judgeReconciled(sys, ev, p1, p2);
    return ev.outcome();
  },
};

const leftCriticalSection = (s: string) =>
  s !== 'PENDING' && s !== 'CLAIMED' && s !== 'RAIL_SUBMITTED';

/**
 * P1's submit is booked and its answer held past the read timeout; P2's is
 * blackholed on the way to the rail. Each by a worker of its own account.
 */
async function submitUnknowable(
  sys: DlockSystem,
  accountIds: string[],
  p1: string,
  p2: string,
): Promise<void> {
  await setStubFaults(sys, { script: ['hold-accepted'] });
  const w1 = await sys.startExecutor('uc05-w1', { EXECUTOR_ACCOUNT_ID: accountIds[0] });
  try {
    await waitForStates(sys, [p1], leftCriticalSection, 20_000, 'P1 to leave the critical section');
  } finally {
    await w1.stop();
  }
  sys.railNet.setFault({ kind: 'blackhole' });
  const w2 = await sys.startExecutor('uc05-w2', { EXECUTOR_ACCOUNT_ID: accountIds[1] });
  try {
    await waitForStates(sys, [p2], leftCriticalSection, 20_000, 'P2 to leave the critical section');
    sys.railNet.setFault({ kind: 'none' });
    // Repeated passes must not touch a quarantined payout.
    await sleep(1_000);
  } finally {
    sys.railNet.setFault({ kind: 'none' });
    await w2.stop();
  }
}

/** The reconciler resolves P1 (money moved) to POSTED and P2 to FAILED; nothing paid twice. */
async function judgeReconciled(
  sys: DlockSystem,
  ev: Evidence,
  p1: string,
  p2: string,
): Promise<void> {
  const final = await waitForStates(
    sys,
    [p1, p2],
    (s) => s === 'POSTED' || s === 'FAILED',
    30_000,
    'the reconciler to resolve both',
  );
  ev.set('resolved', { P1: final.get(p1), P2: final.get(p2) });
  ev.expect(final.get(p1) === 'POSTED', `P1 (money moved) resolved to POSTED (${final.get(p1)})`);
  ev.expect(final.get(p2) === 'FAILED', `P2 (nothing moved) resolved to FAILED (${final.get(p2)})`);
  const t1 = await railTransfers(sys, p1);
  const t2 = await railTransfers(sys, p2);
  ev.set('railTransfers', { P1: t1, P2: t2 });
  ev.expect(t1 === 1 && t2 === 0, 'the rail paid P1 once and P2 never');
  for (const id of [p1, p2]) {
    ev.expect((await submissionsOf(sys, id)).length === 1, 'no payout was ever submitted twice');
  }
  ev.set('railAmbiguousEvents', sys.railProxy.eventCount('rail_ambiguous'));
  ev.expect(sys.railProxy.eventCount('rail_ambiguous') >= 2, 'rail_ambiguous logged for both');
}
