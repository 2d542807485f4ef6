// k8s/ against the code it deploys: every env var a manifest sets is one the app's validated
// config class reads (and the values pass its checks), every container port is the PORT it
// listens on, every probe path a route it serves; the operator's expectations of GKE (disruption
// budgets, spread, the executor's autoscaler and drain); the guards' keys as files.
import 'reflect-metadata';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { NestFactory } from '@nestjs/core';
import { plainToInstance, type ClassConstructor } from 'class-transformer';
import { DatabaseUrlsEnv } from '@dlock/config';
import { buildOpenApiDocument } from '@dlock/http-contract';
import { TracingEnv } from '@dlock/tracing';
import { ConsoleModule } from '../../../apps/console/src/app.module';
import { drainBudgetMs } from '../../../apps/executor/src/execution/domain/lease.rules';
import { ExecutorMetrics } from '../../../apps/executor/src/executor.metrics';
import { openApiDocument, OPENAPI_APPS } from '../../../scripts/openapi-documents';
import { readRepoFile, repoRoot } from './deploy-tools';
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

type Env = Record<string, string>;

/** The variables an environment class declares: every @Env… property is @Expose()d. */
function declared(envClass: ClassConstructor<object>): string[] {
  return Object.keys(plainToInstance(envClass, {}, { excludeExtraneousValues: true }));
}

/** An app's config.ts: its one environment class and its reader (CONTRIBUTING.md). */
function appConfig(app: string): { names: string[]; read: (env: Env) => Obj } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(join(repoRoot, 'apps', app, 'src', 'config')) as Record<string, any>;
  const classes = Object.keys(mod).filter((k) => /^[A-Z]\w*Env$/.test(k));
  const readers = Object.keys(mod).filter((k) => /^read\w*Config$/.test(k));
  if (classes.length !== 1 || readers.length !== 1) {
    throw new Error(`apps/${app}/src/config.ts: expected one *Env class and one read*Config`);
  }
  return { names: declared(mod[classes[0]]), read: mod[readers[0]] };
}

/** What a file variable holds in the check: a database URL, or a path's content. */
const fileContent = (name: string) =>
  name.endsWith('DB_URL') ? 'postgres://app@db.invalid:5432/db' : 'file-content';

/**
 * A container's environment as the pod sees it, then as the entrypoint turns NAME_FILE into
 * NAME (deploy/docker/entrypoint.sh): ConfigMap keys looked up (a missing key that is not
 * optional throws), the pod name for metadata.name.
 */
function resolvedEnv(docs: Obj[], w: Obj, c: Obj): Env {
  const env: Env = {};
  for (const e of c.env ?? []) {
    const ref = e.valueFrom?.configMapKeyRef;
    if (ref) {
      const value = named(docs, 'ConfigMap', ref.name).data?.[ref.key];
      if (value === undefined && !ref.optional) throw new Error(`${ref.name} has no ${ref.key}`);
      if (value !== undefined) env[e.name] = value;
    } else if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') {
      env[e.name] = `${w.metadata.name}-5d8c7b9f4-x2x4q`;
    } else if (e.valueFrom) {
      throw new Error(`${w.metadata.name}: ${e.name} from ${JSON.stringify(e.valueFrom)}`);
    } else {
      env[e.name] = e.value;
    }
  }
  for (const [name, path] of Object.entries(env)) {
    const file = name.match(/^(.+)_FILE$/)?.[1];
    if (!file) continue;
    expect([name, mountedAt(w, c, path)]).toEqual([name, true]);
    env[file] = fileContent(file);
    delete env[name];
  }
  return env;
}

/** The path lies in a volume the container mounts. */
function mountedAt(w: Obj, c: Obj, path: string): boolean {
  const volumes = new Set((podSpec(w).volumes ?? []).map((v: Obj) => v.name));
  return (c.volumeMounts ?? []).some(
    (m: Obj) => volumes.has(m.name) && path.startsWith(`${m.mountPath}/`),
  );
}

const servedPaths = new Map<string, Set<string>>();
/** The routes an app serves, from its module graph in preview mode (scripts/openapi-documents.ts). */
async function routesOf(app: string): Promise<Set<string>> {
  const known = servedPaths.get(app);
  if (known) return known;
  let paths: string[];
  if (OPENAPI_APPS[app]) {
    paths = Object.keys((await openApiDocument(app)).paths);
  } else {
    // The console has no service API to document, but its module graph is there all the same.
    expect(app).toBe('console');
    const nest = await NestFactory.create(
      await ConsoleModule.forRoot({
        env: {
          AUTH_TOKEN_DIR: '/nonexistent',
          AUTH_POLICY: join(repoRoot, 'deploy', 'policy', 'dev-policy.yaml'),
          LOG_LEVEL: 'silent',
        },
      }),
      { preview: true, logger: false, abortOnError: false },
    );
    paths = Object.keys(buildOpenApiDocument(nest, { name: app, authenticated: false }).paths);
    await nest.close();
  }
  servedPaths.set(app, new Set(paths));
  return servedPaths.get(app)!;
}

const DLOCK_IMAGE = /(^|\/)dlock(:[\w.-]+)?$/;

/** Every container of the dlock image (Deployments and Jobs), and the app it runs (APP). */
function dlockWorkloads(docs: Obj[]): { w: Obj; c: Obj; app: string | null }[] {
  return workloads(docs).flatMap((w) =>
    podSpec(w)
      .containers.filter((c: Obj) => DLOCK_IMAGE.test(c.image))
      .map((c: Obj) => {
        const app = (c.env ?? []).find((e: Obj) => e.name === 'APP')?.value ?? null;
        return { w, c, app };
      }),
  );
}

const TRACING = declared(TracingEnv);
const DATABASES = declared(DatabaseUrlsEnv);

/**
 * What is wrong with one dlock container against the code: variables its app (or, for a
 * migration Job, the TypeORM data source) does not read, a value its config refuses, a port
 * it does not listen on, a probe path it does not serve.
 */
async function containerProblems(docs: Obj[], w: Obj, c: Obj, app: string | null) {
  const where = `${w.metadata.name}/${c.name}`;
  // The entrypoint starts dist/apps/$APP/main.js; a Job runs its own command instead.
  const reads = app ? [...appConfig(app).names, ...TRACING, 'APP'] : DATABASES;
  const env = resolvedEnv(docs, w, c);
  const problems = Object.keys(env)
    .filter((name) => !reads.includes(name))
    .map((name) => `${where}: sets ${name}, which ${app ?? 'the migration'} does not read`);
  if (!app) return problems;
  if (!existsSync(join(repoRoot, 'apps', app, 'src', 'main.ts'))) {
    return [...problems, `${where}: APP=${app} names no app`];
  }
  let port: number;
  try {
    port = appConfig(app).read(env).PORT;
  } catch (err) {
    return [...problems, `${where}: its config refuses the environment: ${(err as Error).message}`];
  }
  const ports = c.ports ?? [];
  if (!ports.some((p: Obj) => p.containerPort === port)) {
    problems.push(`${where}: listens on ${port}, exposes ${JSON.stringify(ports)}`);
  }
  const served = await routesOf(app);
  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
    const get = c[probe]?.httpGet;
    if (get && !served.has(get.path)) problems.push(`${where}: ${probe} ${get.path} is not served`);
    if (get && !ports.some((p: Obj) => p.name === get.port && p.containerPort === port)) {
      problems.push(`${where}: ${probe} on port ${get.port}, not the one it listens on`);
    }
  }
  return problems;
}

async function allContainerProblems(docs: Obj[]): Promise<string[]> {
  const problems: string[] = [];
  for (const { w, c, app } of dlockWorkloads(docs)) {
    problems.push(...(await containerProblems(docs, w, c, app)));
  }
  return problems;
}

/** A Service whose targetPort no selected pod has sends its traffic nowhere. */
function serviceProblems(docs: Obj[]): string[] {
  const problems: string[] = [];
  for (const svc of byKind(docs, 'Service')) {
    const pods = workloads(docs).filter((w) =>
      matches({ matchLabels: svc.spec.selector }, w.spec.template.metadata.labels),
    );
    if (pods.length === 0) problems.push(`Service ${svc.metadata.name} selects no pod`);
    for (const w of pods) {
      const ports = podSpec(w).containers.flatMap((c: Obj) => c.ports ?? []);
      for (const p of svc.spec.ports) {
        const target = p.targetPort ?? p.port;
        if (!ports.some((cp: Obj) => cp.name === target || cp.containerPort === target)) {
          problems.push(`Service ${svc.metadata.name}: ${w.metadata.name} has no port ${target}`);
        }
      }
    }
  }
  return problems;
}

describe.each(OVERLAYS)('%s against the code', (dir) => {
  it('sets only variables each app reads, with values its config accepts; ports and probe paths are what it serves', async () => {
    const docs = render(dir);
    const checked = dlockWorkloads(docs);
    expect(checked.filter((x) => x.app).length).toBe(7);
    expect(checked.filter((x) => x.w.kind === 'Job').length).toBe(3);
    expect(await allContainerProblems(docs)).toEqual([]);
    expect(serviceProblems(docs)).toEqual([]);
  }, 60_000);

  it('mounts every volume a container names, each volume once', () => {
    for (const w of workloads(render(dir))) {
      const names = [
        ...(podSpec(w).volumes ?? []).map((v: Obj) => v.name),
        ...(w.spec.volumeClaimTemplates ?? []).map((v: Obj) => v.metadata.name),
      ];
      expect([w.metadata.name, names.length]).toEqual([w.metadata.name, new Set(names).size]);
      for (const c of [...podSpec(w).containers, ...(podSpec(w).initContainers ?? [])]) {
        for (const m of c.volumeMounts ?? []) {
          expect([w.metadata.name, m.name, names.includes(m.name)]).toEqual([
            w.metadata.name,
            m.name,
            true,
          ]);
        }
      }
    }
  });

  it('gives every Deployment that runs more than one pod a disruption budget and a spread', () => {
    const docs = render(dir);
    const autoscaled = new Set(
      byKind(docs, 'HorizontalPodAutoscaler').map((h) => h.spec.scaleTargetRef.name),
    );
    const several = byKind(docs, 'Deployment').filter(
      (d) => (d.spec.replicas ?? 1) > 1 || autoscaled.has(d.metadata.name),
    );
    expect(several.map((d) => d.metadata.name).sort()).toEqual([
      'executor',
      'lock-server',
      'payment-resource',
      'rail-proxy',
    ]);
    for (const d of several) {
      const labels = d.spec.template.metadata.labels;
      const pdbs = byKind(docs, 'PodDisruptionBudget').filter((p) =>
        matches(p.spec.selector, labels),
      );
      // One pod at a time: a drain never takes both lock-server replicas, and never blocks.
      expect([d.metadata.name, pdbs.map((p) => p.spec.maxUnavailable)]).toEqual([
        d.metadata.name,
        [1],
      ]);
      const spread = podSpec(d).topologySpreadConstraints;
      expect(spread.map((s: Obj) => s.topologyKey)).toEqual([
        'topology.kubernetes.io/zone',
        'kubernetes.io/hostname',
      ]);
      for (const s of spread) {
        expect(s.maxSkew).toBe(1);
        expect(s.labelSelector).toEqual(d.spec.selector);
        expect(s.matchLabelKeys).toEqual(['pod-template-hash']);
      }
      expect(spread[0].whenUnsatisfiable).toBe(
        dir.endsWith('local') ? 'ScheduleAnyway' : 'DoNotSchedule',
      );
      expect(spread[1].whenUnsatisfiable).toBe('ScheduleAnyway');
    }
  });

  it("lets a scaled-in executor finish its payout at the rail before the kubelet's SIGKILL", () => {
    const docs = render(dir);
    const executor = named(docs, 'Deployment', 'executor');
    const config = appConfig('executor').read(resolvedEnv(docs, executor, appContainer(executor)));
    const proxy = named(docs, 'Deployment', 'rail-proxy');
    const proxyConfig = appConfig('rail-proxy').read(resolvedEnv(docs, proxy, appContainer(proxy)));
    // The executor's submit budget is derived from the proxy's rail timeout (docs/rail.md, "Deadlines").
    expect(config.RAIL_READ_TIMEOUT_MS).toBe(proxyConfig.RAIL_READ_TIMEOUT_MS);
    expect(config.EXECUTOR_SHUTDOWN_GRACE_MS).toBeGreaterThanOrEqual(
      drainBudgetMs(config.RAIL_READ_TIMEOUT_MS),
    );
    // After the drain the session closes (one lock-server call) and Nest stops.
    expect(podSpec(executor).terminationGracePeriodSeconds * 1000).toBeGreaterThanOrEqual(
      config.EXECUTOR_SHUTDOWN_GRACE_MS + 5_000,
    );
  });

  it("checks proofs against the signers' keys as mounted files, never fetched over the network", () => {
    const docs = render(dir);
    const created = readRepoFile('k8s/overlays/local/create-secrets.sh');
    for (const app of ['payment-resource', 'rail-proxy']) {
      const d = named(docs, 'Deployment', app);
      const c = appContainer(d);
      const jwks = (c.env as Obj[]).filter((e) => /^(GRANT|INSTRUCTION)_JWKS$/.test(e.name));
      expect(jwks.length).toBe(app === 'rail-proxy' ? 2 : 1);
      for (const e of jwks) {
        const mount = c.volumeMounts.find((m: Obj) => e.value.startsWith(`${m.mountPath}/`));
        const volume = podSpec(d).volumes.find((v: Obj) => v.name === mount?.name);
        expect([e.name, volume?.configMap?.name]).toEqual([e.name, 'dlock-signer-jwks']);
        expect(mount.readOnly).toBe(true);
        // The ConfigMap the cluster's setup creates holds that file.
        const file = e.value.slice(mount.mountPath.length + 1);
        expect(created).toContain(`--from-file=${file}=`);
      }
    }
    expect(created).toContain('create configmap dlock-signer-jwks');
    // Any verification key fetched at all comes over TLS (the cluster's own OIDC keys).
    for (const w of workloads(docs)) {
      for (const e of appContainer(w).env ?? []) {
        if (e.name.endsWith('_JWKS') && typeof e.value === 'string') {
          expect(e.value).not.toMatch(/^http:/);
        }
      }
    }
    for (const cm of byKind(docs, 'ConfigMap')) {
      for (const [k, v] of Object.entries<string>(cm.data ?? {})) {
        if (k.endsWith('_JWKS')) expect([k, v]).toEqual([k, expect.stringMatching(/^https:\/\//)]);
      }
    }
  });
});

describe('the manifests check itself', () => {
  it('names a variable the app does not read, a refused value, a probe path not served, a port not listened on', async () => {
    const docs = structuredClone(render('k8s/base'));
    const executor = named(docs, 'Deployment', 'executor');
    const c = appContainer(executor);
    c.env.push({ name: 'EXECUTOR_POLL_MS', value: '500' });
    c.readinessProbe.httpGet.path = '/healthz';
    const lock = appContainer(named(docs, 'Deployment', 'lock-server'));
    lock.env.find((e: Obj) => e.name === 'PORT').value = '9091';
    const job = appContainer(named(docs, 'Job', 'migrate-paydb'));
    job.env.push({ name: 'PAYDB_POOL_MAX', value: '3' });
    const proxy = appContainer(named(docs, 'Deployment', 'rail-proxy'));
    proxy.env.push({ name: 'RAIL_READ_TIMEOUT_MS', value: 'soon' });
    named(docs, 'Service', 'payment-resource').spec.ports[0].targetPort = 'http';
    expect(await allContainerProblems(docs)).toEqual([
      'executor/app: sets EXECUTOR_POLL_MS, which executor does not read',
      'executor/app: readinessProbe /healthz is not served',
      'lock-server/app: listens on 9091, exposes [{"containerPort":8081,"name":"http-metrics"}]',
      'lock-server/app: livenessProbe on port http-metrics, not the one it listens on',
      'lock-server/app: readinessProbe on port http-metrics, not the one it listens on',
      expect.stringMatching(/^rail-proxy\/app: its config refuses .*RAIL_READ_TIMEOUT_MS/s),
      'migrate-paydb/migrate: sets PAYDB_POOL_MAX, which the migration does not read',
    ]);
    expect(serviceProblems(docs)).toEqual([
      'Service payment-resource: payment-resource has no port http',
    ]);
  }, 60_000);
});

describe('the executor autoscaler (gke-dev)', () => {
  it('follows the backlog the executors report, 2 to 12 pods (A-05), and owns the count', () => {
    const docs = render('k8s/overlays/gke-dev');
    const [hpa] = byKind(docs, 'HorizontalPodAutoscaler');
    expect(byKind(docs, 'HorizontalPodAutoscaler')).toHaveLength(1);
    expect(hpa.spec.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'executor',
    });
    expect([hpa.spec.minReplicas, hpa.spec.maxReplicas]).toEqual([2, 12]);
    // The metric the executor really exports, as Managed Prometheus names it for the adapter.
    const gauge = new ExecutorMetrics().backlogAgeSeconds as unknown as { name: string };
    expect(hpa.spec.metrics).toEqual([
      {
        type: 'External',
        external: {
          metric: {
            name: `prometheus.googleapis.com|${gauge.name}|gauge`,
            selector: {
              matchLabels: {
                'resource.labels.cluster': 'dlock-dev',
                'resource.labels.namespace': 'dlock',
              },
            },
          },
          target: { type: 'AverageValue', averageValue: expect.any(String) },
        },
      },
    ]);
    // ... of the cluster terraform creates ...
    expect(readRepoFile('terraform/envs/dev/main.tf')).toMatch(/^\s*name\s*=\s*"dlock-dev"$/m);
    // ... scraped from the executors by Managed Prometheus.
    const monitor = named(docs, 'PodMonitoring', 'executor');
    expect(monitor.spec.selector.matchLabels).toEqual(
      named(docs, 'Deployment', 'executor').spec.selector.matchLabels,
    );
    // An apply does not reset the autoscaler's count: the Deployment leaves replicas unset.
    expect(named(docs, 'Deployment', 'executor').spec.replicas).toBeUndefined();
    // Scale-in slower than scale-out: each pod drains on its way out.
    expect(hpa.spec.behavior.scaleDown.stabilizationWindowSeconds).toBeGreaterThanOrEqual(60);
    for (const other of ['k8s/base', 'k8s/overlays/local']) {
      expect(byKind(render(other), 'HorizontalPodAutoscaler')).toEqual([]);
      expect(named(render(other), 'Deployment', 'executor').spec.replicas).toBe(2);
    }
  });
});
