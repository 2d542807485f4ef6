// k8s/: every overlay rendered offline with kustomize (kubectl kustomize), each
// built-in object validated against the Kubernetes OpenAPI schemas shipped by
// kubernetes-models, CRDs (PodMonitoring, SecretProviderClass) asserted by
// structure, and the NetworkPolicies evaluated into a reachability matrix that
// must equal the edges of docs/references.md exactly (A-13: isolation is the only authN).
import { parsePolicy, registerOperations, TOKEN_LIFETIME_MAX_MS_DEFAULT } from '@dlock/identity';
import { PAYOUT_OPERATIONS } from '@dlock/payout-contract';
import { parseYamlDocs, readRepoFile } from './deploy-tools';
import {
  appContainer,
  byKind,
  matches,
  named,
  OVERLAYS,
  podSpec,
  render,
  workloads,
  type Obj,
} from './k8s-render';

// The policy grants the payout services' operations, which every dlock app registers at boot.
registerOperations(PAYOUT_OPERATIONS);

const APPS = [
  'lock-server',
  'payment-resource',
  'rail-proxy',
  'executor',
  'rail-stub',
  'reconciler',
];
const PORTS: Record<string, number> = {
  'lock-server': 8081,
  'payment-resource': 8082,
  'rail-proxy': 8083,
  executor: 8084,
  'rail-stub': 8085,
  reconciler: 8086,
};
const CRDS = new Set(['monitoring.googleapis.com/v1', 'secrets-store.csi.x-k8s.io/v1']);

function validateSchema(doc: Obj): void {
  // kubernetes-models lays its classes out as <apiVersion>/<Kind>.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(`kubernetes-models/${doc.apiVersion}/${doc.kind}`);
  new mod[doc.kind](doc).validate();
}

describe.each(OVERLAYS)('%s', (dir) => {
  it('renders and every built-in object passes the Kubernetes schema', () => {
    const docs = render(dir);
    expect(docs.length).toBeGreaterThan(30);
    for (const doc of docs) {
      if (CRDS.has(doc.apiVersion)) continue;
      expect(() => validateSchema(doc)).not.toThrow();
      if (doc.kind !== 'Namespace') expect(doc.metadata.namespace).toBe('dlock');
    }
  });

  it('deploys every service with Terminus probes on http-metrics and requests == limits', () => {
    const docs = render(dir);
    for (const app of APPS) {
      const d = named(docs, 'Deployment', app);
      const c = appContainer(d);
      expect(c.ports[0]).toEqual({ name: 'http-metrics', containerPort: PORTS[app] });
      expect(c.env).toEqual(
        expect.arrayContaining([
          { name: 'APP', value: app },
          { name: 'PORT', value: String(PORTS[app]) },
        ]),
      );
      expect(c.livenessProbe.httpGet).toEqual({ path: '/health/live', port: 'http-metrics' });
      expect(c.readinessProbe.httpGet).toEqual({ path: '/health/ready', port: 'http-metrics' });
      expect(podSpec(d).serviceAccountName).toBe(app);
      expect(podSpec(d).securityContext.runAsNonRoot).toBe(true);
    }
    for (const w of workloads(docs)) {
      for (const c of [...podSpec(w).containers, ...(podSpec(w).initContainers ?? [])]) {
        expect(c.resources.requests).toBeDefined();
        expect(c.resources.limits).toEqual(c.resources.requests);
      }
    }
  });

  it("sends every app's spans to the cluster's collector: endpoint from dlock-config, egress on 4318", () => {
    const docs = render(dir);
    const config = byKind(docs, 'ConfigMap').find((c) =>
      c.metadata.name.startsWith('dlock-config'),
    );
    expect(config!.data.OTEL_EXPORTER_OTLP_ENDPOINT).toMatch(/^http:\/\/[a-z.-]+:4318$/);
    const otlp = named(docs, 'NetworkPolicy', 'allow-otlp-egress');
    expect(otlp.spec.egress).toEqual([
      {
        to: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'opentelemetry' } },
          },
        ],
        ports: [{ protocol: 'TCP', port: 4318 }],
      },
    ]);
    for (const app of APPS) {
      const d = named(docs, 'Deployment', app);
      expect(matches(otlp.spec.podSelector, d.spec.template.metadata.labels)).toBe(true);
      expect(appContainer(d).env).toContainEqual({
        name: 'OTEL_EXPORTER_OTLP_ENDPOINT',
        valueFrom: {
          configMapKeyRef: { name: config!.metadata.name, key: 'OTEL_EXPORTER_OTLP_ENDPOINT' },
        },
      });
    }
  });

  it('gives the executor and reconciler their pod name as OWNER_ID', () => {
    for (const app of ['executor', 'reconciler']) {
      expect(appContainer(named(render(dir), 'Deployment', app)).env).toContainEqual({
        name: 'OWNER_ID',
        valueFrom: { fieldRef: { fieldPath: 'metadata.name' } },
      });
    }
  });

  it('names pods by pod name only for the executor and reconciler accounts of its namespace; tokens fit the cap', () => {
    const docs = render(dir);
    const config = byKind(docs, 'ConfigMap').find((c) =>
      c.metadata.name.startsWith('dlock-config'),
    )!;
    const policyMap = byKind(docs, 'ConfigMap').find((c) =>
      c.metadata.name.startsWith('dlock-auth-policy'),
    )!;
    expect(config.data.AUTH_K8S_NAMESPACE).toBe('dlock');
    const workers = ['executor', 'reconciler'];
    expect(config.data.AUTH_K8S_POD_SERVICE_ACCOUNTS.split(',')).toEqual(
      workers.map((app) => podSpec(named(docs, 'Deployment', app)).serviceAccountName),
    );
    const capMs = Number(config.data.AUTH_TOKEN_LIFETIME_MAX_MS ?? TOKEN_LIFETIME_MAX_MS_DEFAULT);
    for (const app of APPS.filter((a) => a !== 'rail-stub')) {
      const d = named(docs, 'Deployment', app);
      expect(d.metadata.namespace).toBe(config.data.AUTH_K8S_NAMESPACE);
      for (const key of ['AUTH_K8S_NAMESPACE', 'AUTH_K8S_POD_SERVICE_ACCOUNTS']) {
        expect(appContainer(d).env).toContainEqual({
          name: key,
          valueFrom: { configMapKeyRef: { name: config.metadata.name, key } },
        });
      }
      const projected = podSpec(d).volumes.flatMap((v: Obj) => v.projected?.sources ?? []);
      for (const source of projected) {
        expect(source.serviceAccountToken.expirationSeconds * 1000).toBeLessThanOrEqual(capMs);
      }
    }
    // A pod is `<deployment>-<replicaset hash>-<suffix>`: what the policy must name.
    const policy = parsePolicy(policyMap.data['auth-policy.yaml'], 'auth-policy.yaml');
    expect(policy.decide('executor-5d8c7b9f4-x2x4q', 'payouts.claim').allowed).toBe(true);
    expect(policy.decide('reconciler-6b7c8d-k2j9d', 'payouts.resolve').allowed).toBe(true);
    expect(
      policy.decide('reconciler-6b7c8d-k2j9d', 'locks.acquire', 'dlock:token-probe').allowed,
    ).toBe(true);
    expect(
      policy.decide('system:serviceaccount:dlock:operator-alice', 'locks.revoke').allowed,
    ).toBe(true);
  });

  it('runs etcd as 3 members, PDB quorum, spread across zones, not evictable by the autoscaler', () => {
    const docs = render(dir);
    const sts = named(docs, 'StatefulSet', 'dlock-etcd');
    expect(sts.spec.replicas).toBe(3);
    expect(sts.spec.template.metadata.annotations).toEqual({
      'cluster-autoscaler.kubernetes.io/safe-to-evict': 'false',
    });
    const zone = podSpec(sts).topologySpreadConstraints[0];
    expect(zone).toMatchObject({ topologyKey: 'topology.kubernetes.io/zone', maxSkew: 1 });
    expect(zone.whenUnsatisfiable).toBe(dir.endsWith('local') ? 'ScheduleAnyway' : 'DoNotSchedule');
    const pdb = named(docs, 'PodDisruptionBudget', 'dlock-etcd');
    expect(pdb.spec).toEqual({
      minAvailable: 2,
      selector: { matchLabels: { 'app.kubernetes.io/name': 'dlock-etcd' } },
    });
  });

  it('migrates each database with the TypeORM CLI, as the owning app', () => {
    const docs = render(dir);
    const owners: Record<string, string> = {
      lockdb: 'lock-server',
      paydb: 'payment-resource',
      proxydb: 'rail-proxy',
    };
    for (const [db, owner] of Object.entries(owners)) {
      const job = named(docs, 'Job', `migrate-${db}`);
      expect(appContainer(job).args).toEqual([
        'node',
        'node_modules/typeorm/cli.js',
        'migration:run',
        '-d',
        `dist/migrations/${db}/data-source.js`,
      ]);
      expect(podSpec(job).serviceAccountName).toBe(owner);
      expect(podSpec(job).restartPolicy).toBe('Never');
    }
  });

  it('never carries a secret value: no Secret objects, no credentials in env', () => {
    const docs = render(dir);
    expect(byKind(docs, 'Secret')).toEqual([]);
    const text = JSON.stringify(docs);
    expect(text).not.toMatch(/postgres(ql)?:\/\/[^"]*:[^"]*@/);
    for (const w of workloads(docs)) {
      for (const c of podSpec(w).containers) {
        for (const e of c.env ?? []) {
          if (/PASSWORD|_URL$/.test(e.name) && e.name.endsWith('DB_URL')) {
            throw new Error(`${w.metadata.name}: ${e.name} set literally; use ${e.name}_FILE`);
          }
        }
      }
    }
  });

  it('runs the console as its own account, with its tokens projected, verifying people like the services', () => {
    const docs = render(dir);
    const d = named(docs, 'Deployment', 'console');
    const c = appContainer(d);
    expect(podSpec(d).serviceAccountName).toBe('console');
    expect(named(docs, 'ServiceAccount', 'console').metadata.annotations).toBeUndefined();
    expect(c.ports[0]).toEqual({ name: 'http-metrics', containerPort: 8090 });
    expect(c.readinessProbe.httpGet).toEqual({ path: '/health/ready', port: 'http-metrics' });
    const tokens = podSpec(d).volumes.find((v: Obj) => v.name === 'service-tokens');
    expect(tokens.projected.sources.map((s: Obj) => s.serviceAccountToken.audience)).toEqual([
      'lock-server',
      'payment-resource',
      'rail-proxy',
    ]);
    expect(c.env).toContainEqual({
      name: 'AUTH_TOKEN_DIR',
      value: '/var/run/secrets/dlock-tokens',
    });
    // The console and every service it acts through read people's issuer from one place.
    for (const app of ['console', 'lock-server', 'payment-resource', 'rail-proxy']) {
      for (const key of ['AUTH_OPERATOR_ISSUER', 'AUTH_OPERATOR_JWKS', 'AUTH_OPERATOR_AUDIENCE']) {
        expect(appContainer(named(docs, 'Deployment', app)).env).toContainEqual({
          name: key,
          valueFrom: { configMapKeyRef: { name: expect.any(String), key, optional: true } },
        });
      }
    }
  });

  it('binds each ServiceAccount to its own Google SA (Workload Identity)', () => {
    const docs = render(dir);
    for (const app of APPS) {
      expect(named(docs, 'ServiceAccount', app).metadata.annotations).toEqual({
        'iam.gke.io/gcp-service-account': `dlock-${app}@dlock-lab.iam.gserviceaccount.com`,
      });
    }
  });
});

describe('PodMonitoring (gke-dev)', () => {
  it('scrapes /metrics on the http-metrics port of every component', () => {
    const docs = render('k8s/overlays/gke-dev');
    const monitors = byKind(docs, 'PodMonitoring');
    expect(monitors.map((m) => m.metadata.name).sort()).toEqual(
      [...APPS, 'console', 'dlock-etcd'].sort(),
    );
    for (const m of monitors) {
      expect(m.apiVersion).toBe('monitoring.googleapis.com/v1');
      expect(m.spec.endpoints).toEqual([
        { port: 'http-metrics', path: '/metrics', interval: '15s' },
      ]);
      const target = workloads(docs).find(
        (w) =>
          w.spec.template.metadata.labels['app.kubernetes.io/name'] ===
          m.spec.selector.matchLabels['app.kubernetes.io/name'],
      );
      expect(target).toBeDefined();
      const ports = podSpec(target!).containers.flatMap((c: Obj) => c.ports ?? []);
      expect(ports.map((p: Obj) => p.name)).toContain('http-metrics');
    }
    expect(byKind(render('k8s/overlays/local'), 'PodMonitoring')).toEqual([]);
  });
});

// The Rules CRD of Managed Service for Prometheus (monitoring.googleapis.com_rules.yaml
// in GoogleCloudPlatform/prometheus-engine): what it requires and allows.
const RULE_FIELDS = new Set(['alert', 'record', 'expr', 'for', 'labels', 'annotations']);
const isStringMap = (m: unknown) =>
  m === undefined ||
  (typeof m === 'object' && m !== null && Object.values(m).every((v) => typeof v === 'string'));

function validateGmpRules(doc: Obj): void {
  expect(Object.keys(doc.spec)).toEqual(['groups']);
  for (const g of doc.spec.groups) {
    expect(Object.keys(g).sort()).toEqual(['interval', 'name', 'rules']);
    expect(g.interval).toMatch(/^\d+[smh]$/);
    for (const r of g.rules) {
      expect(Object.keys(r).filter((k) => !RULE_FIELDS.has(k))).toEqual([]);
      expect([r.alert, typeof r.expr, typeof r.alert, r.record]).toEqual([
        r.alert,
        'string',
        'string',
        undefined,
      ]);
      if (r.for !== undefined) expect(r.for).toMatch(/^\d+[smh]$/);
      expect([r.alert, isStringMap(r.labels), isStringMap(r.annotations)]).toEqual([
        r.alert,
        true,
        true,
      ]);
    }
  }
}

describe('alert Rules (gke-dev)', () => {
  it('deploys every rule of deploy/prometheus/alerts.yml to Managed Prometheus, in the dlock namespace', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { rulesObject } = require('../../../scripts/render-gmp-rules.js');
    const source = rulesObject(readRepoFile('deploy/prometheus/alerts.yml'));
    const rules = byKind(render('k8s/overlays/gke-dev'), 'Rules');
    expect(rules).toHaveLength(1);
    expect(rules[0].apiVersion).toBe('monitoring.googleapis.com/v1');
    expect(rules[0].metadata.namespace).toBe('dlock');
    validateGmpRules(rules[0]);
    expect(rules[0].spec).toEqual(source.spec);
    expect(rules[0].spec.groups.flatMap((g: Obj) => g.rules).length).toBeGreaterThan(15);
    // kind has no Managed Prometheus (nor its CRD).
    expect(byKind(render('k8s/overlays/local'), 'Rules')).toEqual([]);
  });
});

describe('Secrets from Secret Manager (gke-dev)', () => {
  it('mounts each workload its own SecretProviderClass through the GKE CSI driver', () => {
    const docs = render('k8s/overlays/gke-dev');
    const classes = new Map(
      byKind(docs, 'SecretProviderClass').map((s) => [s.metadata.name, s] as [string, Obj]),
    );
    for (const w of workloads(docs)) {
      const vol = (podSpec(w).volumes ?? []).find((v: Obj) => v.name === 'db-secrets');
      if (!vol) continue;
      expect(vol.secret).toBeUndefined();
      expect(vol.csi.driver).toBe('secrets-store-gke.csi.k8s.io');
      const spc = classes.get(vol.csi.volumeAttributes.secretProviderClass);
      expect(spc).toBeDefined();
      expect(spc!.spec.provider).toBe('gke');
      expect(vol.csi.volumeAttributes.secretProviderClass).toBe(podSpec(w).serviceAccountName);
      // Every *_FILE the app reads is a path the class provides.
      const paths = parseYamlDocs(spc!.spec.parameters.secrets)[0].map((s: Obj) => s.path);
      for (const e of appContainer(w).env.filter((x: Obj) => x.name.endsWith('_FILE'))) {
        expect(paths).toContain(e.value.replace('/var/run/secrets/dlock/', ''));
      }
    }
  });

  it('puts a Cloud SQL Auth Proxy native sidecar beside every database client', () => {
    const docs = render('k8s/overlays/gke-dev');
    const expected: Record<string, string> = {
      'lock-server': 'dlock-pg-lock',
      'migrate-lockdb': 'dlock-pg-lock',
      'payment-resource': 'dlock-pg-pay',
      'rail-proxy': 'dlock-pg-pay',
      reconciler: 'dlock-pg-pay',
      'migrate-paydb': 'dlock-pg-pay',
      'migrate-proxydb': 'dlock-pg-pay',
    };
    for (const w of workloads(docs)) {
      const proxy = (podSpec(w).initContainers ?? []).find(
        (c: Obj) => c.name === 'cloud-sql-proxy',
      );
      const instance = expected[w.metadata.name];
      if (!instance) {
        expect(proxy).toBeUndefined();
        continue;
      }
      expect(proxy.restartPolicy).toBe('Always');
      expect(proxy.args).toContain(`dlock-lab:europe-central2:${instance}`);
      expect(proxy.args).toContain('--private-ip');
    }
  });
});

// ---- NetworkPolicy evaluation ------------------------------------------------

interface Pod {
  name: string;
  labels: Record<string, string>;
  ports: { name?: string; containerPort: number }[];
}

function podsOf(docs: Obj[]): Pod[] {
  return workloads(docs).map((w) => ({
    name: w.metadata.name,
    labels: w.spec.template.metadata.labels,
    ports: podSpec(w).containers.flatMap((c: Obj) => c.ports ?? []),
  }));
}

/** A peer in the dlock namespace: podSelector only (namespaceSelector/ipBlock peers are elsewhere). */
const peerAllows = (peer: Obj, pod: Pod) =>
  !peer.namespaceSelector && !peer.ipBlock && matches(peer.podSelector, pod.labels);

const portAllows = (ports: Obj[] | undefined, dst: Pod, port: number) =>
  !ports ||
  ports.some((p) =>
    typeof p.port === 'string'
      ? dst.ports.some((cp) => cp.name === p.port && cp.containerPort === port)
      : p.port === port,
  );

function allowed(policies: Obj[], src: Pod, dst: Pod, port: number): boolean {
  const dir = (type: 'Ingress' | 'Egress', self: Pod, other: Pod) => {
    const selecting = policies.filter(
      (p) => p.spec.policyTypes.includes(type) && matches(p.spec.podSelector, self.labels),
    );
    if (selecting.length === 0) return true;
    const rules = selecting.flatMap(
      (p) => (type === 'Ingress' ? p.spec.ingress : p.spec.egress) ?? [],
    );
    return rules.some(
      (r: Obj) =>
        (r[type === 'Ingress' ? 'from' : 'to'] ?? [{}]).some((peer: Obj) =>
          peerAllows(peer, other),
        ) && portAllows(r.ports, dst, port),
    );
  };
  return dir('Egress', src, dst) && dir('Ingress', dst, src);
}

function reachability(docs: Obj[], extraPods: Pod[] = []): string[] {
  const policies = byKind(docs, 'NetworkPolicy');
  const pods = [...podsOf(docs), ...extraPods];
  const edges: string[] = [];
  for (const src of pods) {
    for (const dst of pods) {
      for (const { containerPort } of dst.ports) {
        if (allowed(policies, src, dst, containerPort)) {
          edges.push(`${src.name} -> ${dst.name}:${containerPort}`);
        }
      }
    }
  }
  return edges.sort();
}

// docs/references.md and A-13, as pod-to-pod edges.
const APP_EDGES = [
  'console -> lock-server:8081',
  'console -> payment-resource:8082',
  'console -> rail-proxy:8083',
  'dlock-etcd -> dlock-etcd:2380',
  'executor -> lock-server:8081',
  'executor -> payment-resource:8082',
  'executor -> rail-proxy:8083',
  'lock-server -> dlock-etcd:2379',
  // A revoke of a payout key raises both fence points before it answers.
  'lock-server -> payment-resource:8082',
  'lock-server -> rail-proxy:8083',
  // The fence points read the signers' public keys from files, not from the signers (below).
  'rail-proxy -> rail-stub:8085',
  'reconciler -> lock-server:8081',
  'reconciler -> payment-resource:8082',
  'reconciler -> rail-proxy:8083',
  'reconciler -> rail-stub:8087',
];

describe('NetworkPolicies', () => {
  it('base: default deny, and exactly the application edges of docs/references.md', () => {
    const docs = render('k8s/base');
    const deny = named(docs, 'NetworkPolicy', 'default-deny-all');
    expect(deny.spec).toEqual({ podSelector: {}, policyTypes: ['Ingress', 'Egress'] });
    expect(reachability(docs)).toEqual(APP_EDGES);
  });

  it('local: plus each database reachable only by its owners, migrations and the reconciler', () => {
    expect(reachability(render('k8s/overlays/local'))).toEqual(
      [
        ...APP_EDGES,
        'lock-server -> pg-lock:5432',
        'migrate-lockdb -> pg-lock:5432',
        'migrate-paydb -> pg-pay:5432',
        'migrate-proxydb -> pg-pay:5432',
        'payment-resource -> pg-pay:5432',
        'rail-proxy -> pg-pay:5432',
        'reconciler -> pg-pay:5432',
      ].sort(),
    );
  });

  it('gke-dev: no extra pod edges; Cloud SQL egress only for database clients, in the terraform range', () => {
    const docs = render('k8s/overlays/gke-dev');
    expect(reachability(docs)).toEqual(APP_EDGES);
    const sqlPolicies = byKind(docs, 'NetworkPolicy').filter((p) =>
      p.metadata.name.endsWith('-cloudsql'),
    );
    expect(sqlPolicies.map((p) => p.spec.podSelector.matchLabels)).toEqual([
      { 'dlock.io/pg-lock-client': 'true' },
      { 'dlock.io/pg-pay-client': 'true' },
    ]);
    for (const p of sqlPolicies) {
      expect(p.spec.egress[0]).toEqual({
        to: [{ ipBlock: { cidr: '10.60.0.0/20' } }],
        ports: [
          { protocol: 'TCP', port: 3307 },
          { protocol: 'TCP', port: 5432 },
        ],
      });
      // Public Google APIs only: every private and link-local range is excluded.
      expect(p.spec.egress[3].to[0].ipBlock.except).toEqual(
        expect.arrayContaining(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16']),
      );
    }
    const clients = workloads(docs)
      .filter((w) =>
        sqlPolicies.some((p) => matches(p.spec.podSelector, w.spec.template.metadata.labels)),
      )
      .map((w) => w.metadata.name)
      .sort();
    expect(clients).toEqual([
      'lock-server',
      'migrate-lockdb',
      'migrate-paydb',
      'migrate-proxydb',
      'payment-resource',
      'rail-proxy',
      'reconciler',
    ]);
  });

  it('lets only the Managed Prometheus collectors scrape, on http-metrics', () => {
    const docs = render('k8s/base');
    const scrape = named(docs, 'NetworkPolicy', 'allow-metrics-scrape');
    expect(scrape.spec.ingress).toEqual([
      {
        from: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'gmp-system' } },
            podSelector: { matchLabels: { 'app.kubernetes.io/name': 'collector' } },
          },
        ],
        ports: [{ protocol: 'TCP', port: 'http-metrics' }],
      },
    ]);
    const scraped = workloads(docs)
      .filter((w) => matches(scrape.spec.podSelector, w.spec.template.metadata.labels))
      .map((w) => w.metadata.name)
      .sort();
    expect(scraped).toEqual([...APPS, 'console', 'dlock-etcd'].sort());
  });

  it('the evaluator itself: without the default deny, an unselected pod is open', () => {
    const intruder: Pod = {
      name: 'intruder',
      labels: { 'app.kubernetes.io/name': 'intruder' },
      ports: [],
    };
    const bystander: Pod = {
      name: 'bystander',
      labels: { 'app.kubernetes.io/name': 'bystander' },
      ports: [{ containerPort: 9999 }],
    };
    const edgesOf = (docs: Obj[]) =>
      reachability(docs, [intruder, bystander]).filter((e) => e.startsWith('intruder'));
    expect(edgesOf(render('k8s/base'))).toEqual([]);
    const open = render('k8s/base').filter(
      (d) => !['default-deny-all', 'allow-dns-egress'].includes(d.metadata.name),
    );
    expect(edgesOf(open)).toEqual(['intruder -> bystander:9999']);
  });
});
