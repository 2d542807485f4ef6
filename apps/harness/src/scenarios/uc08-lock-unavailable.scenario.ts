import { createFixture, payoutStates } from '../payout.fixture';
import { metricSum } from '@dlock/testing';
import { scrape } from '../infra/http.infra';
import { setTimeout as sleep } from 'node:timers/promises';
import { countStates, stubStats, waitForStates } from './scenario.support';
import { Evidence, type Scenario } from './scenario.types';

/**
 * UC-08: the lock service becomes unreachable from the workers (the fault
 * proxy resets every connection). The system fails closed: no payout leaves
 * PENDING, the rail sees nothing, the backlog age grows. When the network
 * heals, the backlog drains.
 */
export const uc08: Scenario = {
  id: 'UC-08',
  title: 'lock service unavailable: fail closed, backlog grows, recovers',
  async run({ sys, scale }) {
    const ev = new Evidence();
    const outageMs = scale === 'short' ? 3_000 : 10_000;
    const worker = await sys.startExecutor('uc08-w1');
    try {
      sys.lockNet.setFault({ kind: 'reset' });
      const before = await stubStats(sys);
      const outage = await createFixture(sys.paydbUrl, {
        prefix: 'uc08',
        accounts: 2,
        payoutsPerAccount: 2,
      });
      const ids = outage.payoutIds;
      await sleep(outageMs);
      const during = await payoutStates(sys.paydbUrl, ids);
      const backlog = metricSum(await scrape(worker.url), 'payout_backlog_age_seconds');
      const after = await stubStats(sys);
      ev.set('duringOutage', countStates(during));
      ev.set('backlogAgeSeconds', backlog);
      ev.set('railCallsDuringOutage', after.submitsReceived - before.submitsReceived);
      ev.expect(
        [...during.values()].every((s) => s === 'PENDING'),
        'no payout moved while the lock service was unreachable',
      );
      ev.expect(after.submitsReceived === before.submitsReceived, 'the rail saw nothing');
      ev.expect(backlog > 0, `the backlog age grew (${backlog})`);
      ev.set('resetConnections', sys.lockNet.stats.connectionsAccepted);
      sys.lockNet.setFault({ kind: 'none' });
      const healedAt = Date.now();
      await waitForStates(sys, ids, (s) => s === 'POSTED', 30_000, 'the backlog to drain');
      ev.set('drainedInMs', Date.now() - healedAt);
    } finally {
      sys.lockNet.setFault({ kind: 'none' });
      await worker.stop();
    }
    return ev.outcome();
  },
};
