import { createFixture } from '../payout.fixture';
import { countStates, stubStats, submissionsOf, waitForStates } from './scenario.support';
import { Evidence, type Scenario } from './scenario.types';

/** UC-01 / flow A: one worker, a few payouts, every one POSTED with one ACKED submission. */
export const uc01: Scenario = {
  id: 'UC-01',
  title: 'happy path: payouts end POSTED, one rail transfer each',
  async run({ sys, scale }) {
    const ev = new Evidence();
    const n = scale === 'short' ? 3 : 10;
    const fx = await createFixture(sys.paydbUrl, {
      prefix: 'uc01',
      accounts: 1,
      payoutsPerAccount: n,
    });
    const before = await stubStats(sys);
    const worker = await sys.startExecutor('uc01-w1', { EXECUTOR_ACCOUNT_ID: fx.accountIds[0] });
    try {
      const states = await waitForStates(
        sys,
        fx.payoutIds,
        (s) => s === 'POSTED',
        30_000,
        'UC-01 payouts POSTED',
      );
      ev.set('states', countStates(states));
    } finally {
      await worker.stop();
    }
    const after = await stubStats(sys);
    let acked = 0;
    for (const id of fx.payoutIds) {
      const subs = await submissionsOf(sys, id);
      acked += subs.filter((s) => s.outcome === 'ACKED').length;
      ev.expect(subs.length === 1, `payout ${id} has ${subs.length} submissions, expected 1`);
    }
    ev.set('ackedSubmissions', acked);
    ev.set('railCalls', after.submitsReceived - before.submitsReceived);
    ev.expect(acked === n, `expected ${n} ACKED submissions, saw ${acked}`);
    ev.expect(
      after.submitsReceived - before.submitsReceived === n,
      'the rail saw one call per payout',
    );
    ev.expect(worker.eventCount('fenced_out') === 0, 'no fenced write on the happy path');
    return ev.outcome();
  },
};
