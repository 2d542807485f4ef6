#!/usr/bin/env node
// `npm run test:mutation`: StrykerJS over the safety-critical files
// (stryker.config.json), then the committed report bench/reports/mutation.md.
//
// One embedded PostgreSQL serves the whole run, started here rather than by
// jest's global setup: Stryker's sandboxes are private directories the
// `postgres` OS user cannot enter, and one server for thousands of mutant runs
// is cheaper than one each. Test files create a database per run and never
// drop it, so a janitor drops the ones older than a few minutes.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
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
// --report-only [result.json …]: the report from earlier runs' JSON results,
// several combined when the campaign ran in file groups (one config each).
const jsonArgs = args.filter((a) => a.endsWith('.json'));
const configFile = jsonArgs[0] ?? 'stryker.config.json';

/** Where the config's JSON reporter writes its result. */
function resultFileOf(config) {
  const parsed = JSON.parse(readFileSync(path.join(root, config), 'utf8'));
  return parsed.jsonReporter?.fileName ?? 'reports/mutation/mutation.json';
}

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

function runStryker() {
  return new Promise((resolve) => {
    const bin = path.join(root, 'node_modules', '.bin', 'stryker');
    const child = spawn(bin, ['run', configFile], {
      cwd: root,
      stdio: 'inherit',
      env: process.env,
    });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

async function main() {
  if (reportOnly) {
    writeMutationReport(root, jsonArgs.length > 0 ? jsonArgs : ['reports/mutation/mutation.json']);
    return 0;
  }
  const started = Date.now();
  await globalSetup();
  const janitor = setInterval(
    () => void dropOldDatabases(process.env.DLOCK_TEST_PG_URL),
    JANITOR_EVERY_MS,
  );
  let code;
  try {
    code = await runStryker();
  } finally {
    clearInterval(janitor);
    await globalTeardown();
  }
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  const result = resultFileOf(configFile);
  // Only this run's result: a failed run must not report an older one.
  if (existsSync(path.join(root, result)) && statSync(path.join(root, result)).mtimeMs >= started) {
    // The run's duration and config travel with its result, for a combined report later.
    writeFileSync(
      path.join(root, result.replace(/\.json$/, '.meta.json')),
      JSON.stringify({ config: configFile, minutes, finishedAt: new Date().toISOString() }),
    );
    writeMutationReport(root, [result]);
  }
  return code;
}

process.exitCode = await main();
