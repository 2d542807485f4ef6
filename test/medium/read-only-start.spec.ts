// Every app starts from the shipped image's entrypoint as a non-root user that
// can write nothing but what its manifest mounts. No Docker
// engine runs here, so the test builds the same situation from the repo's own
// files: the environment each k8s Deployment / compose service sets (read from
// the manifests, so the test follows them), deploy/docker/entrypoint.sh, a
// working directory laid out like the image's /app that the user cannot write,
// and `nobody` as the user. Only /tmp is writable in both deployments (the
// emptyDir / tmpfs / volume); it is mapped to a fresh directory owned by
// `nobody`, and TMPDIR points there as /tmp is the container's temp dir.
// Deviations, all forced by sharing one machine: PORT is a free port, the
// database URLs are this run's embedded PostgreSQL, AUTH_POLICY is the
// repository file the deployment mounts, and every address of another host
// (a peer's service name, the cluster's JWKS, the trace collector) points at a
// closed loopback port: a test reaches nothing beyond this machine, not even
// its DNS resolver, and the apps must start with their peers down anyway.
import { execFileSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import {
  REPO_ROOT,
  freePort,
  http,
  migratedDatabase,
  testSigningKeys,
  waitFor,
  spawnGroup,
} from '@dlock/testing';

const APPS = [
  'lock-server',
  'payment-resource',
  'rail-proxy',
  'executor',
  'rail-stub',
  'reconciler',
];
const WRITABLE_MOUNT = '/tmp';
/** Where each deployment's mounted policy file comes from in the repository. */
const POLICY_SOURCE = { k8s: 'k8s/base', compose: 'deploy/policy' } as const;
/** The signing rings a deployment mounts, by variable, and the test ring each stands for. */
const SIGNING_RINGS: Record<string, 'grants' | 'instructions' | 'receipts'> = {
  GRANT_SIGNING_KEYS: 'grants',
  INSTRUCTION_SIGNING_KEYS: 'instructions',
  RECEIPT_SIGNING_KEYS: 'receipts',
};

const nobody = {
  uid: Number(execFileSync('id', ['-u', 'nobody']).toString().trim()),
  gid: Number(execFileSync('id', ['-g', 'nobody']).toString().trim()),
};

interface K8sEnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    configMapKeyRef?: { key: string; optional?: boolean };
    fieldRef?: { fieldPath: string };
  };
}

/** The `app` container's environment of one Deployment, configMap and fieldRef values resolved. */
function k8sEnv(app: string): Record<string, string> {
  const kustomization = parse(
    readFileSync(path.join(REPO_ROOT, 'k8s/base/kustomization.yaml'), 'utf8'),
  );
  const configMap = new Map<string, string>();
  for (const gen of kustomization.configMapGenerator as { name: string; literals?: string[] }[]) {
    if (gen.name !== 'dlock-config') continue;
    for (const literal of gen.literals ?? []) {
      const at = literal.indexOf('=');
      configMap.set(literal.slice(0, at), literal.slice(at + 1));
    }
  }
  const deployment = parse(readFileSync(path.join(REPO_ROOT, `k8s/base/apps/${app}.yaml`), 'utf8'));
  const container = deployment.spec.template.spec.containers.find(
    (c: { name: string }) => c.name === 'app',
  );
  const mounts = (container.volumeMounts ?? []).map((m: { mountPath: string }) => m.mountPath);
  expect(mounts).toContain(WRITABLE_MOUNT);
  const out: Record<string, string> = {};
  for (const v of container.env as K8sEnvVar[]) {
    if (v.value !== undefined) out[v.name] = v.value;
    else if (v.valueFrom?.configMapKeyRef) {
      const value = configMap.get(v.valueFrom.configMapKeyRef.key);
      if (value === undefined && v.valueFrom.configMapKeyRef.optional === true) continue;
      if (value === undefined) throw new Error(`${app}: ${v.name} names a missing configMap key`);
      out[v.name] = value;
    } else if (v.valueFrom?.fieldRef?.fieldPath === 'metadata.name')
      out[v.name] = `${app}-7d9f-x2x`;
    else throw new Error(`${app}: cannot resolve ${v.name}`);
  }
  return out;
}

/** One compose service's environment, `${VAR:-default}` taking its default. */
function composeEnv(app: string): Record<string, string> {
  const compose = parse(readFileSync(path.join(REPO_ROOT, 'docker-compose.yml'), 'utf8'), {
    merge: true,
  });
  const service = compose.services[app];
  expect(service.read_only).toBe(true);
  const writable = [
    ...(service.tmpfs ?? []),
    ...(service.volumes ?? []).map((v: string) => v.split(':')[1]),
  ];
  expect(writable).toContain(WRITABLE_MOUNT);
  const out: Record<string, string> = {};
  for (const [name, raw] of Object.entries(service.environment as Record<string, string>)) {
    out[name] = String(raw).replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1');
  }
  return out;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '0.0.0.0', '[::1]']);

/** Every URL in `value` (also inside JSON, as FENCE_POINTS has them) whose host is another machine, pointed at `port` on loopback. */
function toLoopback(value: string, port: number): string {
  return value.replace(
    /\b(https?):\/\/([^/:\s"',]+)(:\d+)?/g,
    (url: string, scheme: string, host: string) =>
      LOOPBACK_HOSTS.has(host) ? url : `${scheme}://127.0.0.1:${port}`,
  );
}

interface Sandbox {
  /** The image's /app: dist, node_modules and package.json, not writable by nobody. */
  appDir: string;
  /** What /tmp is in the container (emptyDir, tmpfs, named volume), owned by nobody. */
  tmpDir: string;
  secretsDir: string;
  root: string;
}

function makeSandbox(): Sandbox {
  const root = mkdtempSync(path.join(tmpdir(), 'dlock-ro-'));
  chmodSync(root, 0o755);
  const appDir = path.join(root, 'app');
  mkdirSync(appDir, { mode: 0o755 });
  symlinkSync(path.join(REPO_ROOT, 'dist'), path.join(appDir, 'dist'));
  symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(appDir, 'node_modules'));
  copyFileSync(path.join(REPO_ROOT, 'package.json'), path.join(appDir, 'package.json'));
  const tmpDir = path.join(root, 'tmp');
  mkdirSync(tmpDir);
  chownSync(tmpDir, nobody.uid, nobody.gid);
  const secretsDir = path.join(root, 'secrets');
  mkdirSync(secretsDir, { mode: 0o755 });
  return { appDir, tmpDir, secretsDir, root };
}

/** Spawns the entrypoint as nobody with exactly `env` (plus PATH). */
function startAsNobody(
  sandbox: Sandbox,
  env: Record<string, string>,
): {
  proc: ChildProcess;
  output: () => string;
} {
  const proc = spawnGroup('sh', [path.join(REPO_ROOT, 'deploy/docker/entrypoint.sh')], {
    cwd: sandbox.appDir,
    uid: nobody.uid,
    gid: nobody.gid,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-20_000)));
  proc.stderr?.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-20_000)));
  return { proc, output: () => out };
}

async function stop(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

describe('every app starts as a non-root user on a read-only root filesystem', () => {
  const dbUrls: Record<string, string> = {};
  const sandboxes: Sandbox[] = [];

  beforeAll(async () => {
    dbUrls.LOCKDB_URL = await migratedDatabase('lockdb');
    dbUrls.PAYDB_URL = await migratedDatabase('paydb');
    dbUrls.PROXYDB_URL = await migratedDatabase('proxydb');
  });
  afterAll(() => {
    for (const s of sandboxes) rmSync(s.root, { recursive: true, force: true });
  });

  /** The manifest's env with the forced deviations: free PORT, our databases, /tmp mapped. */
  async function localize(
    env: Record<string, string>,
    sandbox: Sandbox,
    source: 'k8s' | 'compose',
  ) {
    const closedPort = await freePort();
    const out: Record<string, string> = { TMPDIR: sandbox.tmpDir };
    for (const [name, value] of Object.entries(env)) {
      const fileOf = /^(LOCKDB|PAYDB|PROXYDB)_URL_FILE$/.exec(name);
      if (name === 'AUTH_POLICY') {
        // The policy file the deployment mounts (k8s: a ConfigMap; compose: ./deploy/policy).
        out[name] = path.join(REPO_ROOT, POLICY_SOURCE[source], path.basename(value));
      } else if (fileOf) {
        const file = path.join(sandbox.secretsDir, path.basename(value));
        writeFileSync(file, dbUrls[`${fileOf[1]}_URL`], { mode: 0o444 });
        out[name] = file;
      } else if (/^(LOCKDB|PAYDB|PROXYDB)_URL$/.test(name)) out[name] = dbUrls[name];
      else if (name in SIGNING_RINGS) {
        // The signing ring the deployment mounts (k8s: a Secret; compose: the identity volume),
        // readable by the app's user as a mounted secret is.
        const ring = testSigningKeys()[SIGNING_RINGS[name]].keys;
        const file = path.join(sandbox.secretsDir, path.basename(value));
        writeFileSync(file, readFileSync(ring), { mode: 0o444 });
        out[name] = file;
      } else if (value.startsWith(`${WRITABLE_MOUNT}/`)) {
        out[name] = path.join(sandbox.tmpDir, value.slice(WRITABLE_MOUNT.length + 1));
      } else if (name.endsWith('_ISSUER')) {
        out[name] = value; // a name tokens are compared with, never contacted
      } else out[name] = toLoopback(value, closedPort);
    }
    out.PORT = String(await freePort());
    return out;
  }

  const cases = APPS.flatMap((app) => [
    { app, source: 'k8s' as const },
    { app, source: 'compose' as const },
  ]);

  it.each(cases)(
    '$app with the $source environment answers /health/live',
    async ({ app, source }) => {
      const sandbox = makeSandbox();
      sandboxes.push(sandbox);
      const env = await localize(source === 'k8s' ? k8sEnv(app) : composeEnv(app), sandbox, source);
      expect(env.APP).toBe(app);
      const { proc, output } = startAsNobody(sandbox, env);
      const base = `http://127.0.0.1:${env.PORT}`;
      try {
        await waitFor(
          async () => {
            if (proc.exitCode !== null) throw new Error(`exited ${proc.exitCode}`);
            return (await fetch(`${base}/health/live`)).ok;
          },
          20_000,
          `${app} (${source}) to answer /health/live`,
        ).catch((err: unknown) => {
          throw new Error(`${String(err)}\n--- output ---\n${output()}`);
        });
        if (app === 'rail-stub') {
          // The journal is written before the stub acks: an ack proves it is writable.
          const res = await http('POST', `${base}/submit`, {
            body: { clientRef: 'po-ro-1', amountMinor: 100, currency: 'EUR' },
          });
          expect(res.status).toBe(200);
          const lookup = await http('GET', `${base}/lookup?clientRef=po-ro-1`);
          expect(lookup.body.transfers).toHaveLength(1);
        }
      } finally {
        await stop(proc);
      }
    },
  );
});
