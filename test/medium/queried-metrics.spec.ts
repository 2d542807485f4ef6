import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import {
  REPO_ROOT,
  idShapedLabels,
  migratedDatabase,
  scrapeMetrics as scrape,
  seedFundedAccount,
  seedPendingPayout,
  spawnApp,
  startEtcdCluster,
  waitFor,
  withClient,
  type EtcdCluster,
  type RunningApp,
  scratchDir,
} from '@dlock/testing';
import { exposedMetrics, queriedMetrics } from './support/promql';

/**
 * Every metric the Grafana dashboard and the alert rules (compose's
 * deploy/prometheus and the Managed Prometheus Rules under k8s/) query is
 * exposed by a running dlock process or by etcd itself. A dashboard panel or
 * an alert on a name nothing exposes shows "no data" and never fires, and a
 * promtool test fed the same wrong name cannot notice (docs/operations.md
 * "Alerts").
 *
 * Real processes: lock-server (pg), payment-resource, rail-stub, rail-proxy,
 * executor and reconciler, plus one etcd member; one payout goes through so
 * the lazily labelled series exist too.
 */
jest.setTimeout(180_000);

/** Made by the scraper for every target, not by a target. */
const FROM_THE_SCRAPER = ['up'];

/**
 * Cloud Monitoring's own metric `cloudsql.googleapis.com/database/up`, which
 * Managed Prometheus serves under this PromQL name (dashboard panel "Cloud SQL
 * up (GKE only)"); no process of ours can expose it.
 */
const FROM_GOOGLE_CLOUD = ['cloudsql_googleapis_com:database_up'];

// ---- what is queried ---------------------------------------------------------

function filesUnder(dir: string, ext: RegExp): string[] {
  return readdirSync(path.join(REPO_ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && ext.test(e.name))
    .map((e) => path.relative(REPO_ROOT, path.join(e.parentPath, e.name)));
}

type Obj = Record<string, any>;
const yamlDocs = (file: string): Obj[] =>
  parseAllDocuments(readFileSync(path.join(REPO_ROOT, file), 'utf8'))
    .map((d) => d.toJS() as Obj | null)
    .filter((d): d is Obj => d !== null && typeof d === 'object');

/** Every query, as `[where, expr]`. */
function queries(): [string, string][] {
  const out: [string, string][] = [];
  for (const file of filesUnder('deploy/grafana', /\.json$/)) {
    const dash = JSON.parse(readFileSync(path.join(REPO_ROOT, file), 'utf8')) as Obj;
    const panels: Obj[] = (dash.panels ?? []).flatMap((p: Obj) => [p, ...(p.panels ?? [])]);
    for (const p of panels) {
      for (const t of p.targets ?? []) if (t.expr) out.push([`${file} "${p.title}"`, t.expr]);
    }
  }
  const ruleFiles = [
    ...filesUnder('deploy/prometheus', /\.ya?ml$/).flatMap((f) =>
      yamlDocs(f).map((d) => [f, d] as const),
    ),
    ...filesUnder('k8s', /\.ya?ml$/).flatMap((f) =>
      yamlDocs(f)
        .filter((d) => ['Rules', 'ClusterRules', 'GlobalRules'].includes(d.kind))
        .map((d) => [f, d.spec] as const),
    ),
  ];
  for (const [file, doc] of ruleFiles) {
    for (const rule of (doc.groups ?? []).flatMap((g: Obj) => g.rules ?? [])) {
      out.push([`${file} ${rule.alert ?? rule.record}`, rule.expr]);
    }
    // promtool test files: the series they feed must be real names as well.
    for (const t of doc.tests ?? []) {
      for (const s of t.input_series ?? []) out.push([`${file} "${t.name}"`, s.series]);
    }
  }
  return out;
}

// ---- what is exposed ---------------------------------------------------------

let etcd: EtcdCluster;
const apps: RunningApp[] = [];

beforeAll(async () => {
  const [lockdb, paydb, proxydb] = await Promise.all([
    migratedDatabase('lockdb'),
    migratedDatabase('paydb'),
    migratedDatabase('proxydb'),
  ]);
  etcd = await startEtcdCluster({ members: 1, label: 'queried-metrics' });
  const journal = path.join(scratchDir('queried-metrics-'), 'j.jsonl');
  const [lockServer, payments, stub] = await Promise.all([
    spawnApp('lock-server', { LOCK_BACKEND: 'pg', LOCKDB_URL: lockdb }),
    spawnApp('payment-resource', { PAYDB_URL: paydb }),
    spawnApp('rail-stub', { RAIL_STUB_JOURNAL_PATH: journal, RAIL_STUB_JOURNAL_FSYNC: 'false' }),
  ]);
  apps.push(lockServer, payments, stub);
  const proxy = await spawnApp('rail-proxy', { PROXYDB_URL: proxydb, RAIL_STUB_URL: stub.url });
  apps.push(proxy);
  const peers = { LOCK_SERVER_URL: lockServer.url, PAYMENT_RESOURCE_URL: payments.url };
  const [executor, reconciler] = await Promise.all([
    spawnApp('executor', {
      ...peers,
      OWNER_ID: 'metrics-exec',
      RAIL_PROXY_URL: proxy.url,
      EXECUTOR_POLL_INTERVAL_MS: '100',
    }),
    spawnApp('reconciler', {
      ...peers,
      OWNER_ID: 'metrics-reconciler',
      RAIL_STUB_URL: stub.url,
      PAYDB_URL: paydb,
      PROXYDB_URL: proxydb,
      RECONCILER_INTERVAL_MS: '200',
      RECONCILER_CHECK_INTERVAL_MS: '250',
    }),
  ]);
  apps.push(executor, reconciler);
  // A little traffic: one payout through lock, ledger and rail.
  const payoutId = await seedPendingPayout(paydb, await seedFundedAccount(paydb));
  await waitFor(
    async () => {
      const res = await withClient(paydb, (c) =>
        c.query<{ state: string }>(`SELECT state FROM payout WHERE payout_id = $1`, [payoutId]),
      );
      return res.rows[0].state === 'POSTED';
    },
    60_000,
    'the payout to be POSTED',
  );
});

afterAll(async () => {
  await Promise.all(apps.map((a) => a.stop()));
  await etcd?.stop();
});

describe('the PromQL name extractor', () => {
  it('finds the selected metrics and nothing else', () => {
    expect(
      queriedMetrics(
        'histogram_quantile(0.95, sum by (le, op) (rate(a_seconds_bucket{op="x",job=~"y|z"}[5m]))) ' +
          '/ on (job) group_left (instance) b_total offset 5m > bool 1e-9 ' +
          'or absent(c_info) and count(d:e_ratio) < 2 unless time() - max without (x) (f) > 900',
      ),
    ).toEqual(['a_seconds_bucket', 'b_total', 'c_info', 'd:e_ratio', 'f']);
    expect(
      queriedMetrics('lock_fenced_out_total{job="payment-resource",resource="account"}'),
    ).toEqual(['lock_fenced_out_total']);
  });
});

describe('NFR-09: no identifier in any metric label', () => {
  it('every service scraped after a payout went through carries no id-shaped label value', async () => {
    const found: string[] = [];
    for (const app of apps) {
      const text = await scrape(app.url);
      // The scrape is real: each service exposes its own series, labelled ones included.
      expect([app.name, /\{[a-z_]+="/.test(text)]).toEqual([app.name, true]);
      found.push(...idShapedLabels(text).map((f) => `${app.name}: ${f}`));
    }
    expect(apps.map((a) => a.name).sort()).toEqual([
      'executor',
      'lock-server',
      'payment-resource',
      'rail-proxy',
      'rail-stub',
      'reconciler',
    ]);
    expect(found).toEqual([]);
  });
});

describe('dashboard and alert rules', () => {
  it('query only metrics a running app or etcd exposes', async () => {
    const exposed = new Set<string>();
    for (const url of [...apps.map((a) => a.url), etcd.endpoints[0]]) {
      for (const name of exposedMetrics(await scrape(url))) exposed.add(name);
    }
    const all = queries();
    expect(all.length).toBeGreaterThan(50);
    const elsewhere = new Set([...FROM_THE_SCRAPER, ...FROM_GOOGLE_CLOUD]);
    const missing = all.flatMap(([where, expr]) =>
      queriedMetrics(expr)
        .filter((name) => !exposed.has(name) && !elsewhere.has(name))
        .map((name) => `${name} (${where})`),
    );
    expect([...new Set(missing)]).toEqual([]);

    // Every name in the list is still queried.
    const queried = new Set(all.flatMap(([, expr]) => queriedMetrics(expr)));
    expect([...elsewhere].filter((n) => !queried.has(n))).toEqual([]);
  });
});
