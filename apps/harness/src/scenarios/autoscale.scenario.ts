import { isTerminalPayoutState } from '@dlock/payout-contract';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { addPayouts, createFixture, payoutStates } from '../payout.fixture';
import type { AppProcess } from '../infra/app-process.infra';
import type { DlockSystem } from '../dlock-system.infra';
import { countStates, waitForStates } from './scenario.support';
import { Evidence, type Scenario } from './scenario.types';

/** The replica counts the autoscaler walks through (docs/operations.md, "Scaling the executors"). */
export const AUTOSCALE_STEPS = [2, 6, 1] as const;
const ACCOUNTS = 12;
/** The steady inflow while the executors scale: payouts added per tick, one per account in turn. */
const FEED_PER_TICK = 2;
const FEED_TICK_MS = 400;
/** How many payouts each step must post before the next one (it holds at least HOLD_MIN_MS). */
const POSTED_PER_STEP = 8;
const HOLD_MIN_MS = 2_000;
const STEP_TIMEOUT_MS = 30_000;
const DRAIN_TIMEOUT_MS = 45_000;
/** What the kubelet adds beyond the executor's own grace before SIGKILL (k8s/base/apps/executor.yaml). */
const KILL_AFTER_GRACE_MS = 5_000;

export interface AutoscaleOptions {
  /** EXECUTOR_SHUTDOWN_GRACE_MS: the executor's drain budget for the system's rail timeout. */
  shutdownGraceMs: number;
}

interface ScaleIn {
  owner: string;
  inFlightAtSigterm: number;
  exit: { code: number | null; signal: string | null } | null;
  stopMs: number;
  graceOverrun: boolean;
}

/**
 * Executors scaled the way the HorizontalPodAutoscaler scales them (2 → 6 → 1) while payouts
 * keep arriving: new workers join the running ones, and a scale-in SIGTERMs the surplus while
 * their payouts are at the rail, with SIGKILL only after the pod's grace, as the kubelet does.
 * Every payout ends POSTED, none RAIL_AMBIGUOUS, each scaled-in worker exits on its own.
 */
export function autoscaleScenario(o: AutoscaleOptions): Scenario {
  return {
    id: 'AUTOSCALE',
    title: `executors scaled ${AUTOSCALE_STEPS.join(' → ')} under load, SIGTERM on scale-in`,
    run: ({ sys }) => runAutoscale(sys, o),
  };
}

async function runAutoscale(sys: DlockSystem, o: AutoscaleOptions) {
  const ev = new Evidence();
  const fx = await createFixture(sys.paydbUrl, {
    prefix: 'autoscale',
    accounts: ACCOUNTS,
    payoutsPerAccount: 2,
  });
  const feed = new Feed(sys, fx.accountIds);
  const workers: AppProcess[] = [];
  const steps: Record<string, unknown>[] = [];
  const scaleIns: ScaleIn[] = [];
  const env = { EXECUTOR_SHUTDOWN_GRACE_MS: String(o.shutdownGraceMs) };
  try {
    for (const target of AUTOSCALE_STEPS) {
      const t0 = performance.now();
      if (target > workers.length) await scaleOut(sys, workers, target, env);
      else scaleIns.push(...(await scaleIn(workers, target, o.shutdownGraceMs)));
      const posted = await holdUntilPosted(
        sys,
        () => [...fx.payoutIds, ...feed.ids],
        POSTED_PER_STEP,
      );
      steps.push({ executors: workers.length, posted, ms: Math.round(performance.now() - t0) });
    }
  } finally {
    await feed.stop();
  }
  const all = [...fx.payoutIds, ...feed.ids];
  const final = await waitForStates(
    sys,
    all,
    (s) => isTerminalPayoutState(s) || s === 'RAIL_AMBIGUOUS',
    DRAIN_TIMEOUT_MS,
    'the last executor to finish every payout',
  );
  await Promise.all(workers.map((w) => w.stop(o.shutdownGraceMs + KILL_AFTER_GRACE_MS)));
  judge(ev, { steps, scaleIns, states: countStates(final), payouts: all.length, sys, o });
  return ev.outcome();
}

/** New pods join the running ones: started together, each ready before the step counts. */
async function scaleOut(
  sys: DlockSystem,
  workers: AppProcess[],
  target: number,
  env: Record<string, string>,
): Promise<void> {
  const first = workers.length;
  const started = await Promise.all(
    Array.from({ length: target - first }, (_, i) =>
      sys.startExecutor(`autoscale-w${first + i + 1}`, env),
    ),
  );
  workers.push(...started);
}

/**
 * The surplus pods, newest first (a ReplicaSet's scale-down prefers the youngest), SIGTERMed
 * at once; SIGKILL only after their grace. Their lanes in flight are read just before.
 */
async function scaleIn(workers: AppProcess[], target: number, graceMs: number) {
  const leaving = workers.splice(target);
  return Promise.all(
    leaving.map(async (w): Promise<ScaleIn> => {
      const inFlightAtSigterm = await lanesInFlight(w);
      const t0 = performance.now();
      await w.stop(graceMs + KILL_AFTER_GRACE_MS);
      return {
        owner: w.name,
        inFlightAtSigterm,
        exit: w.exitInfo(),
        stopMs: Math.round(performance.now() - t0),
        graceOverrun: w.output().includes('shutdown grace passed'),
      };
    }),
  );
}

/** executor_payouts_in_flight from the worker's own /metrics. */
async function lanesInFlight(w: AppProcess): Promise<number> {
  const res = await fetch(`${w.url}/metrics`, { signal: AbortSignal.timeout(2_000) });
  const line = (await res.text())
    .split('\n')
    .find((l) => l.startsWith('executor_payouts_in_flight'));
  return Number(line?.split(' ').pop() ?? 0);
}

/**
 * Holds a step until `count` more payouts are POSTED (and at least HOLD_MIN_MS); returns how many.
 * `ids` is read on every poll: the payouts the feed adds during the step count too, so a fast
 * step before this one cannot leave it nothing to post.
 */
async function holdUntilPosted(
  sys: DlockSystem,
  ids: () => string[],
  count: number,
): Promise<number> {
  const postedIds = async () => {
    const states = await payoutStates(sys.paydbUrl, ids());
    return new Set([...states].filter(([, s]) => s === 'POSTED').map(([id]) => id));
  };
  const before = await postedIds();
  const t0 = performance.now();
  let posted = 0;
  while (performance.now() - t0 < STEP_TIMEOUT_MS) {
    posted = [...(await postedIds())].filter((id) => !before.has(id)).length;
    if (posted >= count && performance.now() - t0 >= HOLD_MIN_MS) break;
    await sleep(200);
  }
  return posted;
}

function judge(
  ev: Evidence,
  r: {
    steps: Record<string, unknown>[];
    scaleIns: ScaleIn[];
    states: Record<string, number>;
    payouts: number;
    sys: DlockSystem;
    o: AutoscaleOptions;
  },
): void {
  ev.set('steps', r.steps);
  ev.set('scaleIns', r.scaleIns);
  ev.set('payouts', r.payouts);
  ev.set('states', r.states);
  const events = r.sys.eventCounts();
  ev.set('railAmbiguousEvents', events.rail_ambiguous ?? 0);
  for (const [i, step] of r.steps.entries()) {
    ev.expect(
      (step.posted as number) >= POSTED_PER_STEP,
      `step ${i + 1} (${String(step.executors)} executors) posted payouts (${String(step.posted)})`,
    );
  }
  ev.expect(
    r.scaleIns.length === AUTOSCALE_STEPS[1] - AUTOSCALE_STEPS[2],
    `${AUTOSCALE_STEPS[1] - AUTOSCALE_STEPS[2]} executors scaled in (${r.scaleIns.length})`,
  );
  for (const s of r.scaleIns) {
    // Nest re-raises SIGTERM once its shutdown hooks are done: that, or 0, is a clean stop.
    ev.expect(
      s.exit !== null && (s.exit.signal === 'SIGTERM' || (s.exit.code === 0 && !s.exit.signal)),
      `${s.owner} exited on its own after SIGTERM, not by SIGKILL (${JSON.stringify(s.exit)})`,
    );
    ev.expect(!s.graceOverrun, `${s.owner} drained inside its grace`);
    ev.expect(s.stopMs < r.o.shutdownGraceMs, `${s.owner} stopped in ${s.stopMs} ms`);
  }
  ev.expect(
    r.scaleIns.some((s) => s.inFlightAtSigterm > 0),
    'a scale-in met payouts in flight (its SIGTERM was not a no-op)',
  );
  ev.expect(r.states.POSTED === r.payouts, `every payout POSTED (${JSON.stringify(r.states)})`);
  ev.expect(!r.states.RAIL_AMBIGUOUS, 'nothing left RAIL_AMBIGUOUS');
  ev.expect(!events.rail_ambiguous, 'no rail_ambiguous event');
}

/** The steady inflow: FEED_PER_TICK new payouts every FEED_TICK_MS, accounts in turn. */
class Feed {
  readonly ids: string[] = [];
  private next = 0;
  private stopped = false;
  private readonly running: Promise<void>;

  constructor(
    private readonly sys: DlockSystem,
    private readonly accounts: string[],
  ) {
    this.running = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const batch = Array.from(
        { length: FEED_PER_TICK },
        () => this.accounts[this.next++ % this.accounts.length],
      );
      this.ids.push(...(await addPayouts(this.sys.paydbUrl, batch, 1, 100 + this.next)));
      await sleep(FEED_TICK_MS);
    }
  }
}
