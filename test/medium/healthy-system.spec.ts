import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { REPO_ROOT, sleep } from '@dlock/testing';
import { requireTool, run as runTool } from '../unit/deploy/deploy-tools';
import { documentedButNotExposed } from './support/docs-metrics';
import { queriedMetrics } from './support/promql';
import {
  freePortBlock,
  interrupt,
  killLeftovers,
  npmStart,
  printed,
  stubSeedWhere,
  type StartRun,
} from './support/npm-start-run';
import { ScrapedSeries, type Target } from './support/scraped-series';

/**
 * A healthy system raises no alarm. The whole system runs as `npm start` runs
 * it, with the shipped policy (deploy/policy/dev-policy.yaml), three executors and the demo
 * feed, for OBSERVE_MS. Every service's /metrics is scraped every SCRAPE_EVERY_S seconds, as
 * Prometheus would, and the scraped series are replayed through the shipped alert rules
 * (deploy/prometheus/alerts.yml) with `promtool test rules`: no alert may fire. Nothing is
 * wrong in this run: the rail-stub keeps its declines and its slow calls (one in twenty
 * answers after 15 s) but its seed is one whose calls in this run hold none of its injected
 * faults, each of which is by design a RAIL_AMBIGUOUS and rightly a DlockRailAmbiguous.
 *
 * The run holds a minute of the reconciler's work in 36 s: its loops wait half their default
 * delays (docs/reconciler.md, "Configuration"), so it makes at least the resolution, detective,
 * sweep and fencing passes a minute of `npm start` makes, and twelve scrapes see them, as
 * twelve scrapes 5 s apart would.
 *
 * What the replay covers, and what a short run cannot: every rule's expression is evaluated
 * at every scrape (its group interval set to the scrape interval). A rule without `for:` fails
 * the test the first time it holds; a rule with one (1 to 15 min shipped, longer than the run)
 * gets a `for:` of six scrapes, so a condition that holds for six scrapes in a row fails the test
 * while one slow scrape on the loaded machine does not. That is stricter than the shipped rules:
 * a run that passes cannot fire them. Timestamps the services export (`*_timestamp_seconds`) are
 * replayed relative to the first scrape, as promtool's clock starts at 0, so `time() - …`
 * staleness is evaluated as Prometheus would. The windows (`[5m]` .. `[1h]`) hold the run's 36 s
 * only: a slow leak that needs longer to cross a threshold, and DlockEtcdNoLeader and
 * DlockEtcdLeaderChurn (npm start runs the pg lock backend, no etcd) are out of reach here.
 * Series start at the first scrape after `[dlock] up.`, when every process answers ready.
 * The same scrapes also hold every metric name and label value the docs mention.
 * The run's logs, safety feeds and output are left in .tmp/healthy-system for a failure's
 * reader: on a starved machine a holder can really lose its lock (a fenced_out, rightly
 * DlockFencedOut), and the logs say so.
 */
jest.setTimeout(420_000);

const OBSERVE_MS = 36_000;
/** PostgreSQL's word for the autovacuum worker a fast shutdown ends (the stop's, not a fault). */
const AUTOVACUUM_AT_SHUTDOWN =
  /FATAL: +terminating autovacuum process due to administrator command$/;
const SCRAPE_EVERY_S = 3;
/** Prometheus's default scrape timeout: a round of scrapes takes at most this long. */
const SCRAPE_TIMEOUT_MS = 10_000;
/** The reconciler's loop delays in this run, as a share of their defaults. */
const RECONCILER_PACE = 0.5;
/** The reconciler's loops and their default delays (apps/reconciler/src/config.ts). */
const RECONCILER_LOOPS_MS = {
  RECONCILER_INTERVAL_MS: 10_000,
  RECONCILER_CHECK_INTERVAL_MS: 30_000,
  RECONCILER_SWEEP_INTERVAL_MS: 30_000,
  RECONCILER_FENCING_INTERVAL_MS: 2_000,
};
const EXECUTORS = 3;
/** The rail calls this run makes, with room: seed and feed (5/s) for about 3 minutes. */
const RAIL_CALLS = 1_200;
const SEED_PAYOUTS = 40;

let stateDir: string;
let started: StartRun | undefined;
let portBase: number;
const series = new ScrapedSeries();
/** Every service's safety feed, read just before the stop: `service: events`. */
const feeds: Record<string, unknown[]> = {};

function targets(): Target[] {
  const executors = Array.from({ length: EXECUTORS }, (_, i) => ({
    job: 'executor',
    port: portBase + (i === 0 ? 3 : 13 + i),
  }));
  return [
    { job: 'lock-server', port: portBase },
    { job: 'payment-resource', port: portBase + 1 },
    { job: 'rail-proxy', port: portBase + 2 },
    { job: 'rail-stub', port: portBase + 4 },
    { job: 'reconciler', port: portBase + 5 },
    { job: 'console', port: portBase + 9 },
    ...executors,
  ];
}

/** The services that keep a safety feed, and the audience of their tokens. */
function feedServices(): { service: string; port: number }[] {
  return targets()
    .filter((t) => !['rail-stub', 'console'].includes(t.job))
    .map((t) => ({ service: t.job, port: t.port }));
}

/** What the console reads: every service's recent safety events (docs/operations.md). */
async function readFeeds(): Promise<void> {
  const tokens = path.join(stateDir, 'identity', 'tokens', 'console');
  for (const { service, port } of feedServices()) {
    const token = readFileSync(path.join(tokens, service), 'utf8').trim();
    const res = await fetch(`http://127.0.0.1:${port}/v1/safety-events?after=0&limit=500`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const body = (await res.json()) as { events?: unknown[] };
    feeds[`${service}:${port}`] = res.ok ? (body.events ?? []) : [`HTTP ${res.status}`, body];
  }
}

beforeAll(async () => {
  stateDir = mkdtempSync(path.join(tmpdir(), 'dlock-healthy-'));
  portBase = await freePortBlock(13 + EXECUTORS);
  const pgPort = await freePortBlock(1);
  const stubSeed = stubSeedWhere(RAIL_CALLS, (calls) => calls.every((c) => c.fate.kind !== 'fail'));
  started = npmStart({
    DLOCK_STATE_DIR: stateDir,
    DLOCK_PG_PORT: String(pgPort),
    DLOCK_PORT_BASE: String(portBase),
    DLOCK_EXECUTORS: String(EXECUTORS),
    DLOCK_SEED_PAYOUTS: String(SEED_PAYOUTS),
    RAIL_STUB_SEED: String(stubSeed),
    // Every process of the run inherits these; only the reconciler reads them.
    ...Object.fromEntries(
      Object.entries(RECONCILER_LOOPS_MS).map(([name, ms]) => [
        name,
        String(Math.round(ms * RECONCILER_PACE)),
      ]),
    ),
  });
  await printed(started, /\[dlock\] up\./, 180_000);
  const until = Date.now() + OBSERVE_MS;
  while (Date.now() < until) {
    const round = Date.now();
    await series.scrapeRound(targets(), SCRAPE_TIMEOUT_MS);
    await sleep(Math.max(0, round + SCRAPE_EVERY_S * 1_000 - Date.now()));
  }
  await readFeeds();
  await interrupt(started);
});

/** The last run's logs and safety feeds, kept for a failure's reader (as the console tests keep screenshots). */
const KEPT = path.join(REPO_ROOT, '.tmp', 'healthy-system');

afterAll(() => {
  if (started) killLeftovers(started);
  rmSync(KEPT, { recursive: true, force: true });
  cpSync(path.join(stateDir, 'logs'), path.join(KEPT, 'logs'), { recursive: true });
  writeFileSync(path.join(KEPT, 'safety-feeds.json'), JSON.stringify(feeds, null, 2));
  writeFileSync(path.join(KEPT, 'npm-start.out'), started?.output() ?? '');
  rmSync(stateDir, { recursive: true, force: true });
});

// ---- the alert rules, replayed over the scraped series ------------------------

type Obj = Record<string, any>;

/** A `for:` the run can hold: six scrapes (the shipped ones are 1 to 15 min). */
const FOR_IN_RUN = `${6 * SCRAPE_EVERY_S}s`;

/** The shipped rules, evaluated at every scrape, a `for:` shortened to FOR_IN_RUN. */
function rulesUnderTest(): Obj {
  const rules = parse(
    readFileSync(path.join(REPO_ROOT, 'deploy/prometheus/alerts.yml'), 'utf8'),
  ) as Obj;
  for (const group of rules.groups as Obj[]) {
    group.interval = `${SCRAPE_EVERY_S}s`;
    for (const rule of group.rules as Obj[]) if (rule.for !== undefined) rule.for = FOR_IN_RUN;
  }
  return rules;
}

/** Exported unix times, relative to the first scrape: promtool's clock starts at 0. */
function relativeTimes(key: string, values: (number | undefined)[]): (number | undefined)[] {
  if (!/^[a-z_:]+_timestamp_seconds\{/.test(key)) return values;
  return values.map((v) =>
    v === undefined ? v : Math.round((v - series.startedAtS) * 1000) / 1000,
  );
}

interface Replay {
  status: number;
  output: string;
  alerts: string[];
}

/** `promtool test rules` over the scraped series: every alert expected silent at every scrape. */
function replay(
  adjust?: (key: string, values: (number | undefined)[]) => (number | undefined)[],
): Replay {
  const rules = rulesUnderTest();
  const ruleList = (rules.groups as Obj[]).flatMap((g) => g.rules as Obj[]);
  const alerts = ruleList.map((r) => r.alert as string);
  const names = new Set(['up', ...ruleList.flatMap((r) => queriedMetrics(r.expr as string))]);
  const dir = mkdtempSync(path.join(tmpdir(), 'dlock-alert-replay-'));
  try {
    writeFileSync(path.join(dir, 'rules.yml'), stringify(rules));
    const evalTimes = Array.from({ length: series.rounds }, (_, i) => `${i * SCRAPE_EVERY_S}s`);
    const test = {
      rule_files: ['rules.yml'],
      evaluation_interval: `${SCRAPE_EVERY_S}s`,
      tests: [
        {
          name: 'a healthy npm start, scraped',
          interval: `${SCRAPE_EVERY_S}s`,
          input_series: series.inputSeries(names, (key, values) =>
            (adjust ?? ((_k, v) => v))(key, relativeTimes(key, values)),
          ),
          alert_rule_test: evalTimes.flatMap((eval_time) =>
            alerts.map((alertname) => ({ eval_time, alertname, exp_alerts: [] })),
          ),
        },
      ],
    };
    writeFileSync(path.join(dir, 'replay.test.yml'), stringify(test));
    const res = runTool(requireTool('promtool'), ['test', 'rules', 'replay.test.yml'], {
      cwd: dir,
    });
    const output = `${res.stdout}${res.stderr}`;
    const fired = alerts.filter((a) => new RegExp(`alertname: ${a},`).test(output));
    return { status: res.status, output, alerts: fired };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("a healthy system, scraped through a minute of the reconciler's passes", () => {
  it('was scraped every few seconds, every target up from `[dlock] up.` to the end, never two scrapes missed', () => {
    // Every round on time but what one scrape timeout (a starved machine) can cost.
    const expected = Math.floor((OBSERVE_MS - SCRAPE_TIMEOUT_MS) / 1_000 / SCRAPE_EVERY_S);
    expect(series.rounds).toBeGreaterThanOrEqual(expected);
    // One scrape past its 10 s timeout on a starved machine is what Prometheus would record too
    // (DlockTargetDown waits 5 minutes, deploy/prometheus/alerts.yml); two in a row is a target
    // that stopped answering.
    const down = targets().flatMap((t) => {
      const values = series.values('up', { job: t.job, instance: `127.0.0.1:${t.port}` });
      const missed = values.flatMap((v, round) => (v === 1 ? [] : [round]));
      const twice = missed.some((round) => missed.includes(round + 1));
      const last = values.length - 1;
      return twice || missed.includes(0) || missed.includes(last)
        ? [`${t.job} ${t.port} rounds ${missed.join(',')}`]
        : [];
    });
    expect(down).toEqual([]);
  });

  it("saw a minute's reconciler passes: resolution, detective checks and rail sweep ran again while scraped", () => {
    // What the paced loops are for: the alerts judged passes made during the scrapes.
    const passes = (loop: string) => {
      const counts = (series.seen.get('reconciler') ?? []).map(
        (e) =>
          e.samples.find(
            (s) => s.name === 'reconciler_pass_seconds_count' && s.labels.loop === loop,
          )?.value ?? 0,
      );
      return counts.length === 0 ? 0 : counts[counts.length - 1] - counts[0];
    };
    const made = {
      resolution: passes('resolution'),
      checks: passes('checks'),
      sweep: passes('rail_sweep'),
    };
    expect(made.resolution).toBeGreaterThanOrEqual(2);
    expect(made.checks).toBeGreaterThanOrEqual(1);
    expect(made.sweep).toBeGreaterThanOrEqual(1);
  });

  it('raises none of the shipped alerts (promtool test rules over the scraped series)', () => {
    const result = replay();
    expect({ status: result.status, fired: result.alerts }).toEqual({ status: 0, fired: [] });
  });

  it('would have seen an alert: one invalid transition in the same series fires DlockInvalidTransition', () => {
    // The replay's own negative control: the counter the flood of lost races used to raise.
    const half = Math.floor(series.rounds / 2);
    const result = replay((key, values) =>
      key.startsWith('payout_invalid_transition_total{')
        ? values.map((v, i) => (v === undefined || i < half ? v : v + 1))
        : values,
    );
    expect({ status: result.status, fired: result.alerts }).toEqual({
      status: 1,
      fired: ['DlockInvalidTransition'],
    });
  });

  it('shows an empty safety feed at every service: no lost race is reported as a safety event', () => {
    expect(Object.keys(feeds)).toHaveLength(feedServices().length);
    expect(Object.entries(feeds).filter(([, events]) => events.length > 0)).toEqual([]);
  });

  it('logs no ERROR, refuses no call the shipped policy should allow, and no loop fails', () => {
    const dir = path.join(stateDir, 'logs');
    const bad: string[] = [];
    for (const file of readdirSync(dir)) {
      const lines = readFileSync(path.join(dir, file), 'utf8').split('\n');
      for (const [i, line] of lines.entries()) {
        if (line.trim() === '') continue;
        let level = 0;
        try {
          level = (JSON.parse(line) as { level?: number }).level ?? 0;
        } catch {
          // not a service's JSON line: PostgreSQL's, the migrations', the seed's
          // An autovacuum worker running when the stop's fast shutdown comes is ended with a FATAL line.
          if (/\b(ERROR|FATAL|PANIC)\b/.test(line) && !AUTOVACUUM_AT_SHUTDOWN.test(line))
            level = 50;
        }
        if (level >= 50 || /auth_refused|loop iteration failed/.test(line)) {
          // PostgreSQL names the statement on the line after its ERROR.
          const statement = /^\S+ \S+ \S+ \[\d+\] STATEMENT:/.test(lines[i + 1] ?? '');
          bad.push(
            `${file}: ${line.slice(0, 400)}${statement ? ` / ${lines[i + 1].slice(0, 400)}` : ''}`,
          );
        }
      }
    }
    expect(bad).toEqual([]);
    // Nothing of the run crashed: the supervisor names a process that exits on its own.
    const output = started?.output() ?? '';
    const beforeStop = output.slice(0, output.indexOf('[dlock] stopping services'));
    expect(beforeStop.split('\n').filter((l) => / exited \(/.test(l))).toEqual([]);
  });
});

describe('docs that match the system', () => {
  it('exposes every metric name, label and label value README.md and docs/*.md mention', () => {
    // From the same scrapes: a known series is at 0 from the start, so this needs no traffic
    // of every kind, only every process of the run.
    expect(documentedButNotExposed([...series.seen.values()].flat())).toEqual([]);
  });
});
