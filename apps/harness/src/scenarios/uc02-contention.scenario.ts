import { performance } from 'node:perf_hooks';
import { ContentionError } from '@dlock/lock-client';
import { createFixture } from '../payout.fixture';
import { ManualWorker } from './manual-worker.infra';
import { Evidence, type Scenario } from './scenario.types';

/**
 * UC-02 / flow B: W1 holds the account lock; W2's single try is LOCK_CONTENDED,
 * a bounded server-side wait gives up in time, and the SDK's retry budget ends
 * in CONTENTION_EXCEEDED with nothing executed. Once W1 has finished and
 * released, W2 gets a larger token, re-reads the payout, finds it POSTED and
 * does nothing: the re-read, not the lock, prevents the double payout.
 */
export const uc02: Scenario = {
  id: 'UC-02',
  title: 'contended acquire: bounded wait, CONTENTION_EXCEEDED, then a larger token',
  async run({ sys }) {
    const ev = new Evidence();
    const fx = await createFixture(sys.paydbUrl, {
      prefix: 'uc02',
      accounts: 1,
      payoutsPerAccount: 1,
    });
    const [account] = fx.accountIds;
    const [payout] = fx.payoutIds;
    const w1 = new ManualWorker(sys, 'uc02-w1');
    const w2 = new ManualWorker(sys, 'uc02-w2');
    await Promise.all([w1.open(), w2.open()]);
    try {
      // A lease long enough to outlast W2's whole retry budget.
      const h1 = await w1.tryAcquire(account, 0, 20_000);
      ev.expect(h1 !== null, 'W1 acquires the free lock');
      if (!h1) return ev.outcome();
      const t1 = h1.fencingToken;

      const single = await w2.tryAcquire(account);
      ev.set('w2SingleTry', single === null ? 'LOCK_CONTENDED' : 'granted');
      ev.expect(single === null, 'W2 single try is contended');

      const waitMs = 300;
      const t0 = performance.now();
      const waited = await w2.tryAcquire(account, waitMs);
      const waitedMs = Math.round(performance.now() - t0);
      ev.set('w2BoundedWaitMs', waitedMs);
      ev.expect(waited === null, 'W2 bounded wait ends without a grant');
      ev.expect(
        waitedMs >= waitMs - 50 && waitedMs < waitMs + 2_000,
        `bounded wait took ${waitedMs} ms`,
      );

      const t2 = performance.now();
      let code = 'granted';
      try {
        const h = await w2.acquire(account);
        await h.release();
      } catch (err) {
        code = err instanceof ContentionError ? err.code : String(err);
      }
      const budgetMs = Math.round(performance.now() - t2);
      ev.set('w2RetryBudget', { code, elapsedMs: budgetMs });
      ev.expect(
        code === 'CONTENTION_EXCEEDED',
        `W2 retry budget ends in CONTENTION_EXCEEDED, got ${code}`,
      );
      ev.expect(budgetMs < 10_000, 'the retry budget is bounded');

      // W1 renews (same token) before finishing; the contention above took part of its lease.
      await h1.renew();
      const posted = await w1.runFlowA(payout, h1.fence);
      ev.expect(
        posted.status === 200 && posted.body?.state === 'POSTED',
        `W1 posts the payout (${posted.status})`,
      );
      ev.expect(await h1.release(), 'W1 releases');

      const h2 = await w2.tryAcquire(account);
      ev.expect(h2 !== null, 'W2 acquires after the release');
      if (h2) {
        ev.set('tokens', { t1: t1.toString(), t2: h2.fencingToken.toString() });
        ev.expect(h2.fencingToken > t1, 'T2 > T1');
        const view = await w2.get(payout);
        ev.set('w2ReRead', view.body?.state);
        ev.expect(view.body?.state === 'POSTED', 'W2 re-reads POSTED and executes nothing');
        await h2.release();
      }
    } finally {
      await Promise.all([w1.close(), w2.close()]);
    }
    ev.set('acquireAnswers', Object.fromEntries(sys.recorder.acquireStatuses));
    return ev.outcome();
  },
};
