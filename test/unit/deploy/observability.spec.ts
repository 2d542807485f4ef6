// Observability as code: the alert rules and the scrape config are checked by
// promtool, the rules are unit-tested by promtool against synthetic series
// (deploy/prometheus/alerts.test.yml), and every dashboard query is parsed by
// promtool too. Metric names are checked against the ones the code registers.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { registerSafetyEvents, SafetyEvents } from '@dlock/observability';
import { PAYOUT_SAFETY_EVENTS } from '@dlock/payout-contract';
import { parseYamlFile, readRepoFile, repoRoot, requireTool, run } from './deploy-tools';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS script of the repository
const { RUNBOOK_BASE_URL } = require('../../../scripts/render-gmp-rules.js') as {
  RUNBOOK_BASE_URL: string;
};

const promDir = join(repoRoot, 'deploy/prometheus');

function promtool(args: string[], cwd = promDir) {
  const res = run(requireTool('promtool'), args, { cwd });
  if (res.status !== 0) throw new Error(`promtool ${args.join(' ')}:\n${res.stdout}${res.stderr}`);
  return res.stdout;
}

const dashboard = JSON.parse(readRepoFile('deploy/grafana/dlock.json'));
const exprs: string[] = dashboard.panels.flatMap((p: any) =>
  (p.targets ?? []).map((t: any) => t.expr as string),
);
const rules: { alert: string; expr: string; labels: { severity: string } }[] = parseYamlFile(
  'deploy/prometheus/alerts.yml',
).groups.flatMap((g: any) => g.rules);

describe('Prometheus rules and config', () => {
  it('pass promtool check rules / check config', () => {
    expect(promtool(['check', 'rules', 'alerts.yml'])).toContain(
      `SUCCESS: ${rules.length} rules found`,
    );
    expect(promtool(['check', 'config', 'prometheus.yml'])).toContain('is valid prometheus config');
  });

  it('fire as the runbook says on synthetic series (promtool test rules)', () => {
    expect(promtool(['test', 'rules', 'alerts.test.yml'])).toContain('SUCCESS');
  });

  it('page on safety signals, lost detectives and stalled payouts; ticket the rest', () => {
    const severity = Object.fromEntries(rules.map((r) => [r.alert, r.labels.severity]));
    expect(severity).toEqual({
      DlockFencedOut: 'page',
      DlockProofRejected: 'page',
      DlockRailDuplicateAttempted: 'page',
      DlockTokenRegression: 'page',
      DlockDetectiveFinding: 'page',
      DlockDoublePayment: 'page',
      DlockRailLedgerMismatch: 'page',
      DlockInvariantViolation: 'page',
      DlockAuditChainBroken: 'page',
      DlockAuditChainStale: 'ticket',
      DlockAmbiguousPastSla: 'page',
      DlockReconcilerChecksStale: 'page',
      DlockRailSweepStale: 'page',
      DlockInvalidTransition: 'ticket',
      DlockLockRevoked: 'ticket',
      DlockPayoutInvalid: 'ticket',
      DlockPayoutBacklogOld: 'page',
      DlockBacklogAgeMissing: 'page',
      DlockAcquireErrors: 'ticket',
      DlockRailAmbiguous: 'ticket',
      DlockEtcdNoLeader: 'page',
      DlockEtcdLeaderChurn: 'ticket',
      DlockTargetDown: 'ticket',
    });
  });

  it('link every rule to its own heading in docs/operations.md with a clickable runbook_url', () => {
    // GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
    const slug = (text: string) =>
      text
        .toLowerCase()
        .replace(/[^a-z0-9 _-]/g, '')
        .replace(/ /g, '-');
    const headings = readRepoFile('docs/operations.md')
      .split('\n')
      .filter((l) => /^#{1,6} /.test(l))
      .map((l) => l.replace(/^#+ /, '').trim());
    const bySlug = new Map(headings.map((h) => [slug(h), h]));
    expect(bySlug.size).toBe(headings.length); // no anchor taken twice (GitHub would add -1)
    const page = `${RUNBOOK_BASE_URL}docs/operations.md#`;
    for (const r of rules as any[]) {
      const url: string = r.annotations.runbook_url ?? '';
      expect([r.alert, url.startsWith(page), r.annotations.runbook]).toEqual([
        r.alert,
        true,
        undefined,
      ]);
      expect([r.alert, bySlug.get(url.slice(page.length))]).toEqual([
        r.alert,
        `${r.alert} (${r.labels.severity})`,
      ]);
    }
    expect(() => new URL(page)).not.toThrow();
  });

  it('have a promtool unit test case for every rule', () => {
    const tested = new Set(
      parseYamlFile('deploy/prometheus/alerts.test.yml').tests.flatMap((t: any) =>
        (t.alert_rule_test ?? []).map((a: any) => a.alertname),
      ),
    );
    expect(rules.map((r) => r.alert).filter((a) => !tested.has(a))).toEqual([]);
  });

  it('use the safety metric names the services register (docs/operations.md)', () => {
    // As the payout services' modules do when they load.
    registerSafetyEvents(PAYOUT_SAFETY_EVENTS);
    const registry = new Registry();
    new SafetyEvents(registry);
    const registered = registry.getMetricsAsArray().map((m) => m.name);
    const used = [...rules.map((r) => r.expr), ...exprs].join('\n');
    for (const name of [
      'lock_fenced_out_total',
      'rail_duplicate_attempted_total',
      'lock_token_regression_total',
      'rail_ambiguous_total',
      'lock_session_lost_total',
      'lock_revocations_total',
    ]) {
      expect(registered).toContain(name);
      expect(used).toContain(name);
    }
  });
});

describe('Grafana dashboard deploy/grafana/dlock.json', () => {
  it('shows outcomes, backlog, fenced_out, duplicates, acquire latency, sessions and backend health', () => {
    const all = exprs.join('\n');
    for (const needle of [
      'payout_execute_seconds_count',
      'payout_backlog_age_seconds',
      'lock_fenced_out_total',
      'rail_duplicate_attempted_total',
      'lock_server_op_seconds_bucket{op="acquire"}',
      'lock_server_acquire_total',
      'lock_server_renew_total',
      'lock_server_release_total',
      'lock_server_active_sessions',
      'lock_server_active_grants',
      'etcd_server_has_leader',
      'cloudsql_googleapis_com:database_up',
      'up{',
      'process_cpu_seconds_total',
    ]) {
      expect([needle, all.includes(needle)]).toEqual([needle, true]);
    }
    expect(dashboard.uid).toBe('dlock-overview');
    const ids = dashboard.panels.map((p: any) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("divides each service's CPU by the payouts posted (promtool, synthetic series)", () => {
    const panel = dashboard.panels.find(
      (p: any) => p.title === 'CPU per posted payout, by service',
    );
    const [byService, total] = panel.targets.map((t: any) => t.expr as string);
    // Per minute: payment-resource 6 CPU-s, rail-proxy 3, the rail stub 30 (not on
    // the payout path); 1,200 posted and 600 failed payouts. 6 s / 1,200 = 5 ms.
    const paymentResource = ['process_cpu_seconds_total{job="payment-resource"}', '0+6x10'];
    const railProxy = ['process_cpu_seconds_total{job="rail-proxy"}', '0+3x10'];
    const railStub = ['process_cpu_seconds_total{job="rail-stub"}', '0+30x10'];
    const posted = ['payout_execute_seconds_count{job="executor",outcome="posted"}', '0+1200x10'];
    const failed = ['payout_execute_seconds_count{job="executor",outcome="failed"}', '0+600x10'];
    const nonePosted = ['payout_execute_seconds_count{job="executor",outcome="posted"}', '0x10'];
    const test = (name: string, input: string[][], expr: string, samples: object[]) => ({
      name,
      interval: '1m',
      input_series: input.map(([s, values]) => ({ series: s, values })),
      promql_expr_test: [{ expr, eval_time: '10m', exp_samples: samples }],
    });
    const dir = mkdtempSync(join(tmpdir(), 'dlock-dash-'));
    try {
      const tests = {
        rule_files: [],
        evaluation_interval: '1m',
        tests: [
          test('by service', [paymentResource, railProxy, railStub, posted, failed], byService, [
            { labels: '{job="payment-resource"}', value: 5 },
            { labels: '{job="rail-proxy"}', value: 2.5 },
          ]),
          // One service on the path, so that the sum is exact in floating point.
          test('all four', [paymentResource, railStub, posted, failed], total, [
            { labels: '{}', value: 5 },
          ]),
          test('nothing posted: no value, not infinity', [paymentResource, nonePosted], total, []),
        ],
      };
      writeFileSync(join(dir, 'cost.test.json'), JSON.stringify(tests));
      expect(promtool(['test', 'rules', 'cost.test.json'], dir)).toContain('SUCCESS');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has only queries that promtool parses', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dlock-dash-'));
    try {
      // Each query becomes a recording rule, so `check rules` parses it as PromQL.
      const groups = {
        groups: [
          {
            name: 'dashboard',
            rules: exprs.map((expr, i) => ({ record: `dashboard:q${i}`, expr })),
          },
        ],
      };
      writeFileSync(join(dir, 'dashboard.rules.json'), JSON.stringify(groups));
      expect(promtool(['check', 'rules', 'dashboard.rules.json'], dir)).toContain(
        `SUCCESS: ${exprs.length} rules found`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
