import { createFixture, payoutStates } from '../payout.fixture';
import { railTransfers, submissionsOf, transitionsOf, waitForStates } from './scenario.support';
import { Evidence, type Scenario } from './scenario.types';

/** Where the crashed worker leaves the payout, per crash point. */
const LEFT_IN: Record<string, string> = {
  'after-claim': 'CLAIMED',
  'after-submitted': 'RAIL_SUBMITTED',
  'after-submit': 'RAIL_SUBMITTED',
  'after-ack': 'RAIL_ACKED',
};

/**
 * UC-04: a worker dies by SIGKILL between two steps of a payout (the
 * executor's EXECUTOR_CRASH_AT makes it kill itself at an exact step
 * boundary). Its session dies with it; a second worker recovers every payout
 * from its state and the proxy's record, and the rail is paid exactly once.
 */
export const uc04: Scenario = {
  id: 'UC-04',
  title: 'worker SIGKILL mid-payout, recovered by state',
  async run({ sys, scale }) {
    const ev = new Evidence();
    const points = scale === 'short' ? ['after-submitted', 'after-submit'] : Object.keys(LEFT_IN);
    const fx = await createFixture(sys.paydbUrl, {
      prefix: 'uc04',
      accounts: points.length,
      payoutsPerAccount: 1,
    });
    const crashers = await Promise.all(
      points.map((point, i) =>
        sys.startExecutor(
          `uc04-crash-${point}`,
          { EXECUTOR_ACCOUNT_ID: fx.accountIds[i], EXECUTOR_CRASH_AT: point },
          { wait: false },
        ),
      ),
    );
    const exits: Record<string, string> = {};
    for (const [i, p] of crashers.entries()) {
      const exited = await p.waitExit(20_000);
      exits[points[i]] = exited
        ? String(p.exitInfo()?.signal ?? p.exitInfo()?.code)
        : 'still running';
      if (!exited) await p.kill();
    }
    ev.set('crashExits', exits);
    const left = await payoutStates(sys.paydbUrl, fx.payoutIds);
    const leftIn: Record<string, string> = {};
    points.forEach((point, i) => {
      leftIn[point] = left.get(fx.payoutIds[i]) ?? 'MISSING';
      ev.expect(
        exits[point] === 'SIGKILL',
        `the worker died by SIGKILL at ${point} (${exits[point]})`,
      );
      ev.expect(
        leftIn[point] === LEFT_IN[point],
        `${point} left the payout ${LEFT_IN[point]} (${leftIn[point]})`,
      );
    });
    ev.set('leftIn', leftIn);

    const recoverer = await sys.startExecutor('uc04-recover');
    try {
      await waitForStates(
        sys,
        fx.payoutIds,
        (s) => s === 'POSTED',
        30_000,
        'recovery to POST every payout',
      );
    } finally {
      await recoverer.stop();
    }
    for (const [i, id] of fx.payoutIds.entries()) {
      const transfers = await railTransfers(sys, id);
      const subs = await submissionsOf(sys, id);
      const tokens = (await transitionsOf(sys, id))
        .map((t) => t.token)
        .filter((t): t is bigint => t !== null);
      ev.expect(transfers === 1, `${points[i]}: the rail paid once (${transfers})`);
      ev.expect(
        subs.filter((s) => s.outcome === 'ACKED').length === 1,
        `${points[i]}: one ACKED submission (${subs.map((s) => s.outcome).join(',')})`,
      );
      ev.expect(
        new Set(tokens).size >= 2,
        `${points[i]}: a second holder with a new token finished it`,
      );
    }
    return ev.outcome();
  },
};
