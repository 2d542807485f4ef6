import { createFixture, payoutStates } from '../payout.fixture';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitUntil } from '@dlock/polling';
import {
  lockHeld,
  maxToken,
  railTransfers,
  submissionsOf,
  transitionsOf,
  waitForStates,
} from './scenario.support';
import { payoutLockKey } from '@dlock/payout-contract';
import { ManualWorker } from './manual-worker.infra';
import {
  Evidence,
  type Scenario,
  type ScenarioContext,
  type ScenarioOutcome,
} from './scenario.types';

/**
 * UC-03 / flow C: W1 is SIGSTOPped inside its critical section (after
 * RAIL_SUBMITTED, before the submit: EXECUTOR_PAUSE_BEFORE_SUBMIT_MS makes
 * the moment deterministic) for longer than its session, so its lease ends.
 * W2 takes over with T2 > T1 and completes the payout. W1 is SIGCONTed with
 * its liveness checks switched off (EXECUTOR_SKIP_LIVENESS_CHECK, the
 * experiment) and presents T1 to the proxy; the harness then presents T1 to
 * the payment-resource as W1's next write would. Both guards must refuse.
 *
 * With both fencing kill switches off the same run is the negative control:
 * the stale submit reaches the rail and pays twice.
 */
export async function runPausedWorker(
  ctx: ScenarioContext,
  fencing: boolean,
): Promise<ScenarioOutcome> {
  const { sys } = ctx;
  const ev = new Evidence();
  const tag = fencing ? 'uc03' : 'ctl';
  const fx = await createFixture(sys.paydbUrl, { prefix: tag, accounts: 1, payoutsPerAccount: 1 });
  const run: Run = { ctx, ev, tag, account: fx.accountIds[0], payout: fx.payoutIds[0] };
  const pauseMs = 1_500;
  const w1 = await sys.startExecutor(`${tag}-w1`, {
    EXECUTOR_ACCOUNT_ID: run.account,
    EXECUTOR_SKIP_LIVENESS_CHECK: 'true',
    EXECUTOR_PAUSE_BEFORE_SUBMIT_MS: String(pauseMs),
  });
  try {
    const { t1, pausedAt } = await stopInsideCriticalSection(run, w1);
    await takeOver(run, t1);
    // W1 wakes up believing it still holds the lock and submits under T1.
    w1.resume();
    ctx.log(`${tag}: W1 resumed after ${Date.now() - pausedAt} ms`);
    const resourceAnswer = await staleWrites(run, t1);
    await w1.stop();
    await judge(run, fencing, t1, resourceAnswer);
  } finally {
    w1.resume();
    await w1.stop();
  }
  return ev.outcome();
}

/** One run of the scenario: its fixture's account and payout, and where evidence goes. */
interface Run {
  ctx: ScenarioContext;
  ev: Evidence;
  tag: string;
  account: string;
  payout: string;
}

type Executor = Awaited<ReturnType<ScenarioContext['sys']['startExecutor']>>;

/** SIGSTOPs W1 once it is inside the critical section and waits until its lease lapses. */
async function stopInsideCriticalSection(
  { ctx: { sys, log }, ev, tag, account, payout }: Run,
  w1: Executor,
): Promise<{ t1: bigint; pausedAt: number }> {
  await waitForStates(
    sys,
    [payout],
    (s) => s === 'RAIL_SUBMITTED',
    15_000,
    'W1 inside the critical section',
  );
  w1.pause();
  const pausedAt = Date.now();
  log(`${tag}: W1 stopped inside the critical section`);
  const t1 = maxToken(sys.recorder.tokensFor(payoutLockKey(account)));
  ev.set('t1', t1.toString());
  // The server decides the lease is over (session TTL passes without heartbeats).
  await waitUntil('W1 lease to lapse', async () => !(await lockHeld(sys, account)), 15_000, 100);
  ev.set('leaseLapsedAfterMs', Date.now() - pausedAt);
  return { t1, pausedAt };
}

/** W2 takes the lock with a larger token and completes the payout. */
async function takeOver(
  { ctx: { sys }, ev, tag, account, payout }: Run,
  t1: bigint,
): Promise<void> {
  const w2 = await sys.startExecutor(`${tag}-w2`, { EXECUTOR_ACCOUNT_ID: account });
  try {
    await waitForStates(sys, [payout], (s) => s === 'POSTED', 20_000, 'W2 to complete the payout');
    const t2 = maxToken(sys.recorder.tokensFor(payoutLockKey(account)));
    ev.set('t2', t2.toString());
    ev.expect(t2 > t1, `W2 holds a larger token (T1 ${t1}, T2 ${t2})`);
  } finally {
    await w2.stop();
  }
}

/** W1's stale submit reaches the proxy; the harness then makes W1's next write at the resource. */
async function staleWrites({ ctx: { sys }, ev, tag, account, payout }: Run, t1: bigint) {
  await waitUntil(
    'W1 stale submit to reach the proxy',
    async () => (await submissionsOf(sys, payout)).some((s) => s.presentedToken === t1),
    15_000,
    100,
  );
  await sleep(300);
  // The experiment: W1's next write at the resource, under the same stale token: its
  // submit's outcome. (Its SUBMITTED again would be a replay of a request already
  // answered under T1 with the payout's key, and a replay gets the stored answer.)
  const stale = new ManualWorker(sys, `${tag}-w1`);
  const resourceAnswer = await stale.railOutcome(
    payout,
    sys.recorder.fenceOf(payoutLockKey(account), t1),
    {
      outcome: 'AMBIGUOUS',
      reason: 'stale holder: submit outcome unknown',
    },
  );
  await stale.close();
  ev.set('staleResourceWrite', {
    status: resourceAnswer.status,
    code: resourceAnswer.code,
  });
  return resourceAnswer;
}

/** Both guards refused T1 and the rail paid once; with fencing off, the rail paid twice. */
async function judge(
  { ctx: { sys }, ev, payout }: Run,
  fencing: boolean,
  t1: bigint,
  resourceAnswer: Awaited<ReturnType<typeof staleWrites>>,
): Promise<void> {
  const subs = await submissionsOf(sys, payout);
  const transfers = await railTransfers(sys, payout);
  ev.set(
    'submissions',
    subs.map((s) => `${s.presentedToken}:${s.outcome ?? 'unresolved'}`),
  );
  ev.set('railTransfers', transfers);
  ev.set('finalState', (await payoutStates(sys.paydbUrl, [payout])).get(payout));
  ev.set(
    'transitions',
    (await transitionsOf(sys, payout)).map((t) => `${t.from}→${t.to}@${t.token ?? '-'}`),
  );
  const fencedRail = sys.railProxy.eventCount('fenced_out:rail');
  const fencedAccount = sys.payment.eventCount('fenced_out:account');
  ev.set('fencedOut', { rail: fencedRail, account: fencedAccount });
  const staleAtProxy = subs.find((s) => s.presentedToken === t1);
  if (fencing) {
    ev.expect(
      staleAtProxy?.outcome === 'FENCED',
      `the proxy fenced W1's submit (${staleAtProxy?.outcome})`,
    );
    ev.expect(
      resourceAnswer.status === 409 && resourceAnswer.code === 'FENCED_OUT',
      `the resource fenced W1's write (${resourceAnswer.status} ${resourceAnswer.code})`,
    );
    ev.expect(fencedRail > 0 && fencedAccount > 0, 'fenced_out observed at both guards');
    ev.expect(transfers === 1, `the rail paid once (${transfers})`);
  } else {
    ev.expect(
      staleAtProxy !== undefined && staleAtProxy.outcome !== 'FENCED',
      'the stale submit was admitted',
    );
    ev.expect(transfers > 1, `with fencing off the rail paid twice (${transfers})`);
  }
}

export const uc03: Scenario = {
  id: 'UC-03',
  title: 'paused worker: stale writes fenced at the resource and at the proxy',
  run: (ctx) => runPausedWorker(ctx, true),
};
