import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { railClientRef } from '@dlock/payout-contract';
import { LockClient, type LockSession } from '@dlock/lock-client';
import {
  REPO_ROOT,
  adminUrl,
  createDatabase,
  http,
  migrate,
  migratedDatabase,
  seedFundedAccount,
  seedPendingPayout,
  spawnApp,
  waitFor,
  withClient,
  RECONCILER_READER,
  type RunningApp,
  testTokenProvider,
  testTokenDir,
  testRevocationNotice,
  spawnGroup,
  scratchDir,
} from '@dlock/testing';
import { DataSource } from 'typeorm';
import { MIGRATIONS, type DatabaseName } from '../../migrations';

/**
 * docs/operations.md, executed. Every fenced block of the runbook carries a
 * marker on the line right above it, and the marker says how it is checked:
 *
 *   <!-- runbook: tested -->          an `sh` block, run here with bash against
 *                                     real processes (rules below);
 *   <!-- runbook: tested sql=paydb --> an `sql` block, run verbatim with psql
 *                                     against a migrated database of that name;
 *   <!-- runbook: cluster -->         needs GKE, Docker, kind, gcloud or kubectl:
 *                                     only `bash -n` here;
 *   <!-- runbook: cluster sql=lockdb --> as `cluster`, and its SQL heredoc
 *                                     (`<<'SQL'` … `SQL`) runs here with psql;
 *   <!-- runbook: output -->          text the system prints; the test makes
 *                                     the system print it (`...` = anything).
 *
 * What counts as "needs the cluster" (a judgement, so written down): a block
 * that calls kubectl (other than `port-forward`), gcloud, docker, kind,
 * minikube, terraform, etcdutl or etcdctl. SQL, `npx typeorm`, `npm run` and
 * curl against a service's route all run here, so a `cluster` block made only
 * of those fails, as does a runnable command left in running text (an inline
 * `curl …`, `npx …` or SQL statement: put it in a block).
 *
 * How a `tested` sh block runs, without making it less readable for a human:
 *   - `kubectl … port-forward … &` lines are dropped: the services listen here;
 *   - `http://127.0.0.1:<port>` with a port from "What runs where" is pointed at
 *     the process started here for that service (8087, the rail-stub's lookup
 *     gateway, at the rail-stub itself);
 *   - `NAME=...` is a value the reader fills in; the test supplies NAME;
 *   - other `UPPER_CASE` variables come from the environment, as the runbook
 *     says; bash runs with `-euo pipefail`, so an unset one fails the block.
 * In SQL, a quoted placeholder such as `'PAYOUT_ID'` is replaced by the value
 * the case supplies; psql variables (`-v floor=…` in a cluster block) are
 * evaluated by bash with the case's variables, as the reader's shell would.
 *
 * The databases are created under their real names (lockdb, paydb, proxydb)
 * in this run's embedded PostgreSQL, so `GRANT … ON DATABASE paydb` and
 * `\c proxydb` run as written. Each case below names its block by a fragment
 * of it: every block that runs here has a case, and a case names one block.
 */
jest.setTimeout(120_000);

const DOC = 'docs/operations.md';
const KINDS = ['tested', 'cluster', 'output'] as const;
type Kind = (typeof KINDS)[number];
const DATABASES: readonly DatabaseName[] = ['lockdb', 'paydb', 'proxydb'];

export interface RunbookBlock {
  /** 1-based line of the opening fence. */
  line: number;
  lang: string;
  text: string;
  kind: Kind;
  sql?: DatabaseName;
}

const MARKER = /^<!-- runbook: (\w+)(?: sql=(\w+))? -->$/;
const FENCE = /^(\s*)```(\w*)\s*$/;
const CLUSTER_TOOL =
  /(^|[\s;&|(`$])(kubectl|gcloud|docker|kind|minikube|terraform|etcdutl|etcdctl)\s/m;
const PORT_FORWARD = /^\s*kubectl\b.*\bport-forward\b.*&\s*(#.*)?$/;
const RUNNABLE_INLINE = /^(curl|npx)\s|^(SELECT|INSERT|UPDATE|DELETE|GRANT|REVOKE)\s.+/;

/** The fenced blocks of a markdown text with their markers, and what breaks the rules. */
export function runbookBlocks(markdown: string): { blocks: RunbookBlock[]; problems: string[] } {
  const lines = markdown.split('\n');
  const blocks: RunbookBlock[] = [];
  const problems: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]);
    if (!open) {
      for (const [, span] of lines[i].matchAll(/`([^`]+)`/g)) {
        if (RUNNABLE_INLINE.test(span))
          problems.push(
            `line ${i + 1}: runnable command in running text, put it in a block: ${span}`,
          );
      }
      continue;
    }
    const [, indent, lang] = open;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i].trim() !== '```'; i++) body.push(lines[i]);
    const text = body.map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l)).join('\n');
    let above = start - 1;
    while (above >= 0 && lines[above].trim() === '') above--;
    const marker = MARKER.exec(above >= 0 ? lines[above].trim() : '');
    const where = `line ${start + 1}`;
    if (!marker) {
      problems.push(`${where}: no <!-- runbook: tested|cluster|output --> marker above the block`);
      continue;
    }
    const [, kind, sql] = marker;
    if (!(KINDS as readonly string[]).includes(kind)) {
      problems.push(`${where}: unknown marker kind "${kind}"`);
      continue;
    }
    if (sql !== undefined && !(DATABASES as readonly string[]).includes(sql)) {
      problems.push(`${where}: unknown database "${sql}"`);
      continue;
    }
    const block = { line: start + 1, lang, text, kind: kind as Kind, sql: sql as DatabaseName };
    problems.push(...blockProblems(block).map((p) => `${where}: ${p}`));
    blocks.push(block);
  }
  return { blocks, problems };
}

/**
 * Log events the prose names: `event=NAME`, the alternatives of a
 * `"event":"(A|B)"` grep, and backticked names next to the word event(s) or
 * warning(s) ("the `lock_revoked` log event", "events `a`, `b`").
 */
export function namedEvents(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/\s+/g, ' ');
  const names = new Set<string>();
  const ticked = (list: string) => [...list.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]);
  for (const m of prose.matchAll(/`event=([a-z_]+)`/g)) names.add(m[1]);
  for (const m of prose.matchAll(/"event":"\(([a-z_|]+)\)"/g))
    for (const n of m[1].split('|')) names.add(n);
  const list = '((?:`[a-z_]+`(?:,? and |,? or |, )?)+)';
  for (const re of [
    new RegExp(`${list} (?:log )?(?:events?|warnings?)\\b`, 'g'),
    new RegExp(`\\bevents? ${list}`, 'g'),
  ])
    for (const m of prose.matchAll(re)) for (const n of ticked(m[1])) names.add(n);
  return [...names].sort();
}

/** Every .ts source file of the apps and libs, tests excluded, as one text. */
function productionSource(): string {
  return ['apps', 'libs']
    .flatMap((dir) =>
      readdirSync(path.join(REPO_ROOT, dir), { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts'))
        .map((e) => path.join(e.parentPath, e.name))
        .filter((f) => !f.includes(`${path.sep}test${path.sep}`)),
    )
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
}

function blockProblems(b: RunbookBlock): string[] {
  const withoutForwards = b.text
    .split('\n')
    .filter((l) => !PORT_FORWARD.test(l))
    .join('\n');
  const needsCluster = CLUSTER_TOOL.test(withoutForwards);
  switch (b.kind) {
    case 'cluster':
      if (b.lang !== 'sh') return ['a cluster block is a shell block (`sh`)'];
      if (!needsCluster)
        return ['marked cluster, but nothing in it needs a cluster: mark it tested and run it'];
      if (b.sql && !/<<'SQL'\n[\s\S]*?\nSQL$/m.test(b.text))
        return [`sql=${b.sql} on a cluster block without a <<'SQL' heredoc`];
      if (!b.sql && b.text.includes("<<'SQL'"))
        return ['its SQL heredoc can run here: name the database (cluster sql=…)'];
      return [];
    case 'tested':
      if (b.lang === 'sql') return b.sql ? [] : ['a tested sql block names its database (sql=…)'];
      if (b.lang !== 'sh') return ['a tested block is `sh` or `sql`'];
      if (b.sql) return ['sql=… belongs to sql blocks and cluster heredocs'];
      return needsCluster ? ['marked tested, but it calls a cluster tool: mark it cluster'] : [];
    case 'output':
      return b.lang === 'text' ? [] : ['an output block is `text`'];
  }
}

// ---- running things ------------------------------------------------------------

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end (60 s at most), stdin fed from `input`. */
async function run(
  cmd: string,
  args: string[],
  env: Record<string, string>,
  input = '',
): Promise<Run> {
  // The operator's tokens, one file per service, as docs/security.md tells an operator to get them.
  const DLOCK_TOKENS = await testTokenDir('operator');
  return new Promise((resolve, reject) => {
    const child = spawnGroup(cmd, args, {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? tmpdir(),
        DLOCK_TOKENS,
        ...env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: 60_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    // A program that exits without reading its input (bash -c, psql -c) closes the pipe first.
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

/** The URL of one of this run's databases, under its real name. */
interface Role {
  name: string;
  password: string;
}
/** The reconciler's read-only role: its migrations grant it, the test run's setup lets it log in. */
const RECONCILER_RO: Role = RECONCILER_READER;

function dbUrl(name: DatabaseName, user?: Role): string {
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  if (user) {
    url.username = user.name;
    url.password = user.password;
  }
  return url.toString();
}

async function psql(
  db: DatabaseName,
  sqlText: string,
  vars: Record<string, string> = {},
  user?: Role,
): Promise<Run> {
  const args = ['-X', '-qAt', '-v', 'ON_ERROR_STOP=1', '-d', dbUrl(db, user), '-f', '-'];
  for (const [k, v] of Object.entries(vars)) args.push('-v', `${k}=${v}`);
  // `\c proxydb` connects again with the same user: psql takes the password from the environment.
  const password = user?.password ?? decodeURIComponent(new URL(adminUrl()).password);
  return run('psql', args, { PGPASSWORD: password }, sqlText);
}

const fillSql = (text: string, fill: Record<string, string>) =>
  Object.entries(fill).reduce((t, [k, v]) => t.replaceAll(`'${k}'`, `'${v}'`), text);

/** The psql `-v name=value` settings of a cluster block, evaluated by bash. */
async function psqlVars(block: string, env: Record<string, string>) {
  const vars: Record<string, string> = {};
  for (const [, name, value] of block.matchAll(/-v (\w+)=("[^"]*"|'[^']*'|\S+)/g)) {
    if (name === 'ON_ERROR_STOP') continue;
    const res = await run('bash', ['--norc', '-euc', `printf %s ${value}`], env);
    expect([name, res.code, res.stderr]).toEqual([name, 0, '']);
    vars[name] = res.stdout;
  }
  return vars;
}

const heredocs = (block: string) =>
  [...block.matchAll(/<<'SQL'\n([\s\S]*?)\nSQL$/gm)].map((m) => m[1]).join('\n');

/** Documented port (What runs where) -> the process started here. */
let local: Map<string, string>;

function localScript(text: string, env: Record<string, string>): string {
  const kept = text.split('\n').filter((l) => !PORT_FORWARD.test(l));
  return kept
    .join('\n')
    .replace(/http:\/\/127\.0\.0\.1:(\d+)/g, (all, port: string) => {
      const url = local.get(port);
      if (!url) throw new Error(`no local service for ${all}`);
      return url;
    })
    .replace(/\b([A-Z][A-Z0-9_]*)=\.\.\.(?=\s|$)/g, (_all, name: string) => {
      if (env[name] === undefined) throw new Error(`the case does not fill in ${name}=...`);
      return `${name}="$${name}"`;
    });
}

function bash(script: string, env: Record<string, string>): Promise<Run> {
  return run('bash', ['--norc', '-euo', 'pipefail', '-c', script], env);
}

/** `curl -sS -w ' HTTP %{http_code}\n'` lines: each body with its status. */
function replies(stdout: string): { status: number; body: any }[] {
  return stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const m = /^(.*) HTTP (\d{3})$/.exec(l);
      if (!m) throw new Error(`not a "<body> HTTP <status>" line: ${l}`);
      return { status: Number(m[2]), body: m[1] === '' ? undefined : JSON.parse(m[1]) };
    });
}

const rows = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split('|'));

// ---- the system under the runbook ------------------------------------------------

let apps: RunningApp[] = [];
let lockServer: RunningApp;
let payments: RunningApp;
let proxy: RunningApp;
let stub: RunningApp;
let reconciler: RunningApp;
let session: LockSession;
/**
 * The person at the keyboard is the identity of their token (DLOCK_TOKENS is the
 * `operator` identity's here): the audit records that identity, and a body naming
 * anyone else would be only a note (docs/security.md).
 */
const OPERATOR = 'operator';
const WORKER = 'runbook-worker';

async function namedDatabase(name: DatabaseName): Promise<string> {
  await withClient(adminUrl(), async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${name}`);
  });
  await migrate(dbUrl(name), name);
  return dbUrl(name);
}

async function sql<T = Record<string, any>>(db: string, text: string, params: unknown[] = []) {
  return withClient(db, async (c) => (await c.query(text, params)).rows as T[]);
}

function fenced(op: string, payoutId: string, token: bigint, body: unknown) {
  return http('POST', `${payments.url}/v1/payouts/${payoutId}/${op}`, {
    headers: {
      'x-fencing-token': token.toString(),
      'x-owner-id': WORKER,
      'x-idempotency-key': `payout-${payoutId}`,
    },
    body,
  });
}

/** A payout a worker left in RAIL_AMBIGUOUS under a real grant; nothing reached the rail. */
async function ambiguousPayout(): Promise<{ payoutId: string; accountId: string }> {
  const accountId = await seedFundedAccount(dbUrl('paydb'), 100_000);
  const payoutId = await seedPendingPayout(dbUrl('paydb'), accountId, 2_500);
  const lock = await session.acquire(`payout:${accountId}`);
  try {
    const submissionId = randomUUID();
    const steps: [string, unknown][] = [
      ['claim', { expectedState: 'PENDING' }],
      ['rail-outcome', { outcome: 'SUBMITTED', submissionId }],
      ['rail-outcome', { outcome: 'AMBIGUOUS', submissionId }],
    ];
    for (const [op, body] of steps) {
      const res = await fenced(op, payoutId, lock.fencingToken, body);
      expect([op, res.status]).toEqual([op, 200]);
    }
  } finally {
    await lock.release();
  }
  return { payoutId, accountId };
}

/** A payout submitted through rail-proxy (one rail_submission row), left RAIL_SUBMITTED. */
async function submittedPayout(): Promise<{ payoutId: string; accountId: string }> {
  const accountId = await seedFundedAccount(dbUrl('paydb'), 100_000);
  const payoutId = await seedPendingPayout(dbUrl('paydb'), accountId, 1_000);
  const lock = await session.acquire(`payout:${accountId}`);
  try {
    const headers = {
      'x-fencing-token': lock.fencingToken.toString(),
      'x-owner-id': WORKER,
      'x-idempotency-key': `payout-${payoutId}`,
    };
    const res = await http('POST', `${proxy.url}/v1/rail/submissions`, {
      headers,
      body: { payoutId, accountId, amountMinor: 1_000, currency: 'EUR', beneficiaryRef: 'ben-1' },
    });
    expect(res.status).toBe(200);
  } finally {
    await lock.release();
  }
  return { payoutId, accountId };
}

/** A token the lock-server just issued (the source's current value, about). */
async function freshToken(): Promise<bigint> {
  const lock = await session.acquire(`runbook:probe-${randomUUID().slice(0, 8)}`);
  await lock.release();
  return lock.fencingToken;
}

async function revoked(accountId: string) {
  const lock = await session.acquire(`payout:${accountId}`);
  const res = await http('POST', `${lockServer.url}/v1/locks/payout:${accountId}/revoke`, {
    body: {
      operator: OPERATOR,
      reason: 'runbook test revoke',
      expectedToken: `${lock.fencingToken}`,
    },
  });
  expect(res.status).toBe(200);
  return res.body as { newTokenFloor: string; revokedToken: string };
}

beforeAll(async () => {
  await Promise.all(DATABASES.map(namedDatabase));
  // The roles terraform creates on Cloud SQL (terraform/envs/dev: users).
  await withClient(adminUrl(), async (c) => {
    for (const role of ['pay_app', 'proxy_app', 'runbook_stranger']) {
      await c.query(`DO $$ BEGIN CREATE ROLE ${role} LOGIN PASSWORD 'runbook';
        EXCEPTION WHEN duplicate_object THEN NULL; END $$`);
    }
  });
  const journal = path.join(scratchDir('runbook-stub-'), 'j.jsonl');
  [lockServer, payments, stub] = await Promise.all([
    spawnApp('lock-server', { LOCK_BACKEND: 'pg', LOCKDB_URL: dbUrl('lockdb') }),
    spawnApp('payment-resource', { PAYDB_URL: dbUrl('paydb') }),
    spawnApp('rail-stub', { RAIL_STUB_JOURNAL_PATH: journal, RAIL_STUB_JOURNAL_FSYNC: 'false' }),
  ]);
  apps = [lockServer, payments, stub];
  proxy = await spawnApp('rail-proxy', { PROXYDB_URL: dbUrl('proxydb'), RAIL_STUB_URL: stub.url });
  apps.push(proxy);
  reconciler = await spawnApp('reconciler', {
    LOCK_SERVER_URL: lockServer.url,
    PAYMENT_RESOURCE_URL: payments.url,
    RAIL_STUB_URL: stub.url,
    RAIL_PROXY_URL: proxy.url,
    PAYDB_URL: dbUrl('paydb'),
    PROXYDB_URL: dbUrl('proxydb'),
    OWNER_ID: 'runbook-reconciler',
    RECONCILER_FENCING_INTERVAL_MS: '200',
    RECONCILER_REVOCATION_SETTLE_MS: '0',
    // No transfer is evidence of absence only after a day: ambiguous payouts stay for the operator.
    RECONCILER_SETTLEMENT_WINDOW_MS: '86400000',
  });
  apps.push(reconciler);
  local = new Map([
    ['8081', lockServer.url],
    ['8082', payments.url],
    ['8083', proxy.url],
    ['8085', stub.url],
    ['8086', reconciler.url],
    ['8087', stub.url],
  ]);
  session = await new LockClient({
    baseUrl: lockServer.url,
    ownerId: WORKER,
    token: testTokenProvider(WORKER),
  }).openSession();
}, 90_000);

afterAll(async () => {
  await session?.close();
  await Promise.all(apps.map((a) => a.stop()));
});

// ---- one case per block that runs ----------------------------------------------------

interface Case {
  /** A fragment only this block contains. */
  block: string;
  /** Sets the scene; returns the variables the block reads and the SQL placeholders. */
  prepare?: () => Promise<{ env?: Record<string, string>; fill?: Record<string, string> }>;
  /** An sql block runs as this role instead of the superuser. */
  user?: Role;
  /** What the runbook says the block does. */
  check: (out: Run, env: Record<string, string>, again: Again) => Promise<void> | void;
}

/** Runs the same sh block once more with other variables. */
type Again = (env: Record<string, string>) => Promise<Run>;

const ok = (out: Run) =>
  expect({ code: out.code, stderr: out.stderr }).toEqual({ code: 0, stderr: '' });

const fiveHoursBack = (payoutId: string) =>
  sql(
    dbUrl('paydb'),
    `UPDATE payout SET ambiguous_at = clock_timestamp() - interval '5 hours' WHERE payout_id = $1`,
    [payoutId],
  );

const CASES: Case[] = [
  {
    block: 'npm run db:migrate',
    async prepare() {
      const [lock, pay, prx] = await Promise.all(DATABASES.map((d) => createDatabase(`rb_${d}`)));
      return { env: { LOCKDB_URL: lock, PAYDB_URL: pay, PROXYDB_URL: prx } };
    },
    async check(out, env) {
      expect(out.code).toBe(0);
      expect(out.stdout).toContain('[migrate] lockdb: 7 migration(s) applied');
      expect(out.stdout).toContain('[migrate] paydb: 9 migration(s) applied');
      expect(out.stdout).toContain('[migrate] proxydb: 7 migration(s) applied');
      expect(out.stdout).toContain('No migrations are pending');
      const seq = await sql(env.LOCKDB_URL, `SELECT last_value FROM fencing_token_seq`);
      expect(seq).toEqual([{ last_value: '1' }]);
    },
  },
  {
    block: 'CREATE INDEX CONCURRENTLY IF NOT EXISTS payout_terminal_by_time',
    async prepare() {
      await sql(dbUrl('paydb'), `DROP INDEX payout_terminal_by_time`);
      return { env: {} };
    },
    async check(out) {
      ok(out);
      const built = await sql(
        dbUrl('paydb'),
        `SELECT i.indisvalid AS valid FROM pg_index i
           JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'payout_terminal_by_time'`,
      );
      expect(built).toEqual([{ valid: true }]);
    },
  },
  ...(
    [
      ['paydb', ['ledger_entry_by_time']],
      ['proxydb', ['rail_submission_by_time', 'rail_submission_outcome_by_time']],
      ['lockdb', ['lock_revocation_by_time']],
    ] as const
  ).map(([db, indexes]) => ({
    block: `CREATE INDEX CONCURRENTLY IF NOT EXISTS ${indexes[0]}`,
    async prepare() {
      for (const index of indexes) await sql(dbUrl(db), `DROP INDEX ${index}`);
      return { env: {} };
    },
    async check(out: Run) {
      ok(out);
      const built = await sql(
        dbUrl(db),
        `SELECT c.relname AS name, i.indisvalid AS valid FROM pg_index i
           JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname LIKE '%_by_time' ORDER BY 1`,
      );
      expect(built).toEqual(
        {
          paydb: [
            { name: 'ledger_entry_by_time', valid: true },
            { name: 'payout_terminal_by_time', valid: true },
          ],
          proxydb: [
            { name: 'rail_submission_by_time', valid: true },
            { name: 'rail_submission_outcome_by_time', valid: true },
          ],
          lockdb: [{ name: 'lock_revocation_by_time', valid: true }],
        }[db],
      );
    },
  })),
  {
    block: 'GRANT CONNECT ON DATABASE paydb TO pay_app;',
    async check(out) {
      ok(out);
      const ro = dbUrl('paydb', RECONCILER_RO);
      for (const table of ['account', 'payout', 'ledger_entry', 'payout_transition'])
        await expect(sql(ro, `SELECT count(*) FROM ${table}`)).resolves.toHaveLength(1);
      await expect(sql(ro, `DELETE FROM payout WHERE false`)).rejects.toThrow(/permission denied/);
      const stranger = dbUrl('paydb', { name: 'runbook_stranger', password: 'runbook' });
      await expect(sql(stranger, 'SELECT 1')).rejects.toThrow(/permission denied for database/);
    },
  },
  {
    block: 'GRANT CONNECT ON DATABASE proxydb TO proxy_app;',
    async check(out) {
      ok(out);
      const ro = dbUrl('proxydb', RECONCILER_RO);
      for (const table of ['rail_submission', 'rail_high_water'])
        await expect(sql(ro, `SELECT count(*) FROM ${table}`)).resolves.toHaveLength(1);
      const stranger = dbUrl('proxydb', { name: 'runbook_stranger', password: 'runbook' });
      await expect(sql(stranger, 'SELECT 1')).rejects.toThrow(/permission denied for database/);
    },
  },
  {
    block: '/v1/locks/$KEY/revoke',
    async prepare() {
      const accountId = await seedFundedAccount(dbUrl('paydb'));
      const stuck = await session.acquire(`payout:${accountId}`);
      return {
        env: { ACCOUNT_ID: accountId, TOKEN: `${stuck.fencingToken}`, OPERATOR },
      };
    },
    check(out, env) {
      ok(out);
      const [l7, l8] = replies(out.stdout);
      expect(l7).toEqual({
        status: 200,
        body: expect.objectContaining({ fencingToken: env.TOKEN, ownerId: WORKER }),
      });
      expect(l8).toEqual({
        status: 200,
        body: expect.objectContaining({
          revokedToken: env.TOKEN,
          newTokenFloor: expect.stringMatching(/^\d+$/),
          revocationId: expect.any(String),
        }),
      });
      expect(BigInt(l8.body.newTokenFloor)).toBeGreaterThan(BigInt(env.TOKEN));
    },
  },
  {
    // The same block, for what the runbook says its other answers mean.
    block: '/v1/locks/$KEY/revoke',
    async prepare() {
      const accountId = await seedFundedAccount(dbUrl('paydb'));
      const first = await session.acquire(`payout:${accountId}`);
      await first.release();
      return { env: { ACCOUNT_ID: accountId, TOKEN: `${first.fencingToken}`, OPERATOR } };
    },
    async check(out, env, again) {
      ok(out);
      // Not held any more: L7 shows no holder, and the revoke answers 404.
      const [l7, l8] = replies(out.stdout);
      expect(l7.status).toBe(200);
      expect(l7.body).not.toHaveProperty('fencingToken');
      expect([l8.status, l8.body.code]).toEqual([404, 'NOT_FOUND']);
      // Someone else holds a newer token: 409 FENCED_OUT, and the holder keeps it.
      const newer = await session.acquire(`payout:${env.ACCOUNT_ID}`);
      const raced = await again(env);
      ok(raced);
      expect(replies(raced.stdout).map((r) => [r.status, r.body?.code])).toEqual([
        [200, undefined],
        [409, 'FENCED_OUT'],
      ]);
      expect(replies(raced.stdout)[0].body.fencingToken).toBe(`${newer.fencingToken}`);
      await newer.release();
    },
  },
  {
    block: 'SELECT * FROM lock_revocation ORDER BY revoked_at DESC LIMIT 10;',
    async prepare() {
      await revoked(await seedFundedAccount(dbUrl('paydb')));
      return {};
    },
    check(out) {
      ok(out);
      expect(rows(out.stdout).length).toBeGreaterThan(0);
      expect(out.stdout).toContain(OPERATOR);
    },
  },
  {
    block: 'FROM lock_revocation_request ORDER BY requested_at DESC LIMIT 10;',
    async prepare() {
      // A two-person request as the lock-server files it (docs/security.md), approved.
      await withClient(dbUrl('lockdb'), (c) =>
        c.query(
          `INSERT INTO lock_revocation_request
             (request_id, lock_key, operator, reason, requested_by, expires_at)
           VALUES ($1, 'payout:runbook', 'alice', 'INC-1 runbook check', 'operator-alice',
                   now() + interval '5 minutes')`,
          [randomUUID()],
        ),
      );
      return {};
    },
    check(out) {
      ok(out);
      expect(rows(out.stdout).length).toBeGreaterThan(0);
      expect(out.stdout).toContain('operator-alice');
    },
  },
  {
    block: "SELECT 'paydb', GREATEST(",
    async prepare() {
      // Both guards just saw a token the source issued (raised to it as the reconciler would).
      const token = `${await freshToken()}`;
      const accountId = await seedFundedAccount(dbUrl('paydb'));
      const notice = testRevocationNotice({ key: `payout:${accountId}`, floor: token });
      for (const url of [
        `${payments.url}/v1/accounts/${accountId}/fence-floor`,
        `${proxy.url}/v1/rail/high-water/${accountId}/floor`,
      ]) {
        const res = await http('POST', url, {
          headers: { 'x-operator': OPERATOR },
          body: { floor: token, notice },
        });
        expect(res.status).toBe(200);
      }
      return { env: { TOKEN: token } };
    },
    async check(out, env) {
      ok(out);
      const [pay, prx] = rows(out.stdout);
      expect([pay[0], prx[0]]).toEqual(['paydb', 'proxydb']);
      const [maxFence] = await sql(dbUrl('paydb'), `SELECT max(fence)::text AS v FROM account`);
      expect(pay[1]).toBe(maxFence.v);
      expect(BigInt(pay[1])).toBeGreaterThanOrEqual(BigInt(env.TOKEN));
      expect(BigInt(prx[1])).toBeGreaterThanOrEqual(BigInt(env.TOKEN));
      // Without PGPASSWORD and no terminal, psql cannot ask: the failure the step names.
      const url = new URL(dbUrl('paydb'));
      url.password = '';
      const bare = await run('psql', ['-X', '-qAt', '-d', url.toString(), '-c', 'SELECT 1'], {
        PGPASSFILE: '/dev/null',
      });
      expect(bare.stderr).toContain('fe_sendauth: no password supplied');
    },
  },
  {
    block: "SELECT setval('fencing_token_seq'",
    async prepare() {
      const [guard] = await sql(dbUrl('paydb'), `SELECT max(fence)::text AS v FROM account`);
      return { env: { GUARD_MAX: `${BigInt(guard.v ?? '0') + 5n}` } };
    },
    async check(out, env) {
      ok(out);
      const floor = BigInt(env.GUARD_MAX) + 1_000_000n;
      const last = rows(out.stdout).at(-1);
      expect(last).toEqual([expect.any(String), `${floor}`, 't']);
      // What the step is for: the next grant is above every token the guards hold.
      expect(await freshToken()).toBeGreaterThan(floor);
      // Twice is harmless: the sequence only moves forward.
      const again = await psql(
        'lockdb',
        heredocs(blockWith("SELECT setval('fencing_token_seq'").text),
        { floor: '1' },
      );
      ok(again);
      expect(rows(again.stdout).at(-1)?.[2]).toBe('t');
      expect(await freshToken()).toBeGreaterThan(floor);
    },
  },
  {
    block: "WHERE state = 'RAIL_AMBIGUOUS' AND ambiguous_at < now() - interval '4 hours'",
    // "reconciler role is enough": run as reconciler_ro, with its migration's grants.
    user: RECONCILER_RO,
    async prepare() {
      ok(await psql('paydb', blockWith('GRANT CONNECT ON DATABASE paydb').text));
      const old = await ambiguousPayout();
      await fiveHoursBack(old.payoutId);
      const recent = await ambiguousPayout();
      return { env: { OLD: old.payoutId, RECENT: recent.payoutId } };
    },
    check(out, env) {
      ok(out);
      const ids = rows(out.stdout).map((r) => r[0]);
      expect(ids).toContain(env.OLD);
      expect(ids).not.toContain(env.RECENT);
      const row = rows(out.stdout).find((r) => r[0] === env.OLD);
      expect(row?.slice(2, 5)).toEqual(['2500', 'EUR', railClientRef(env.OLD)]);
    },
  },
  {
    block: '/lookup?clientRef=$CLIENT_REF',
    async prepare() {
      const clientRef = railClientRef(randomUUID());
      const res = await http('POST', `${stub.url}/submit`, {
        body: { clientRef, amountMinor: 700, currency: 'EUR' },
      });
      expect(res.status).toBe(200);
      return { env: { CLIENT_REF: clientRef } };
    },
    check(out, env) {
      ok(out);
      expect(replies(out.stdout)).toEqual([
        {
          status: 200,
          body: expect.objectContaining({
            clientRef: env.CLIENT_REF,
            transfers: [
              expect.objectContaining({
                clientRef: env.CLIENT_REF,
                amountMinor: 700,
                currency: 'EUR',
              }),
            ],
          }),
        },
      ]);
    },
  },
  {
    block: '/v1/payouts/$PAYOUT_ID/abandon',
    async prepare() {
      const { payoutId } = await ambiguousPayout();
      await fiveHoursBack(payoutId);
      return { env: { PAYOUT_ID: payoutId, OPERATOR } };
    },
    async check(out, env, again) {
      ok(out);
      expect(replies(out.stdout)).toEqual([
        {
          status: 200,
          body: expect.objectContaining({
            payoutId: env.PAYOUT_ID,
            previousState: 'RAIL_AMBIGUOUS',
            operator: OPERATOR,
          }),
        },
      ]);
      // Audited: the transition names the operator and the reason.
      const audit = await sql(
        dbUrl('paydb'),
        `SELECT actor, reason FROM payout_transition WHERE payout_id = $1 AND actor = $2`,
        [env.PAYOUT_ID, OPERATOR],
      );
      expect(audit).toEqual([
        { actor: OPERATOR, reason: 'INC-1234 rail confirms no transfer for client_ref' },
      ]);
      // Before the 4 h are up it is the reconciler's, not the operator's: refused, unchanged.
      const early = await ambiguousPayout();
      const refused = replies((await again({ ...env, PAYOUT_ID: early.payoutId })).stdout);
      expect(refused.map((r) => [r.status, r.body.code])).toEqual([[409, 'PAYOUT_NOT_CLAIMABLE']]);
    },
  },
  {
    block: "SELECT * FROM payout_transition WHERE payout_id = 'PAYOUT_ID'",
    async prepare() {
      const { payoutId } = await ambiguousPayout();
      return { fill: { PAYOUT_ID: payoutId } };
    },
    check(out) {
      ok(out);
      expect(out.stdout).toMatch(/RAIL_AMBIGUOUS/);
      expect(rows(out.stdout)).toHaveLength(3);
    },
  },
  {
    block: '/v1/reconciler/report',
    check(out) {
      ok(out);
      expect(replies(out.stdout)).toEqual([
        {
          status: 200,
          body: expect.objectContaining({
            resolution: expect.objectContaining({ duplicates: [] }),
            railSweep: expect.objectContaining({ openFindings: [] }),
          }),
        },
      ]);
    },
  },
  {
    block: "SELECT * FROM rail_submission WHERE payout_id = 'PAYOUT_ID';",
    async prepare() {
      const { payoutId } = await submittedPayout();
      return { fill: { PAYOUT_ID: payoutId } };
    },
    check(out) {
      ok(out);
      expect(rows(out.stdout)).toHaveLength(1);
    },
  },
  {
    block: 'npx typeorm migration:revert',
    async prepare() {
      return { env: { LOCKDB_URL: await migratedDatabase('lockdb') } };
    },
    check(out) {
      ok(out);
      expect(out.stdout).toMatch(/\[X\] \d+ LockSchema1764400000000/);
      expect(out.stdout).toMatch(/\[X\] \d+ RevocationsKept1796083200000/);
      expect(out.stdout).toMatch(/\[X\] \d+ RevocationsChained1796313600000/);
      expect(out.stdout).toMatch(/\[X\] \d+ RevocationRequests1796400000000/);
      expect(out.stdout).toMatch(/\[X\] \d+ ReconcilerReader1796486400000/);
      expect(out.stdout).toMatch(/\[X\] \d+ HistoryBounded1796572800000/);
      expect(out.stdout).toMatch(/\[X\] \d+ SessionStates1796662800000/);
      expect(out.stdout).toContain(
        'Migration SessionStates1796662800000 has been reverted successfully',
      );
    },
  },
  {
    block: 'refusing to revert',
    async check(out) {
      // A lockdb's first migration, reverted (the later ones first, then the first one),
      // in process: `migration:revert` prints the error its down() throws.
      const url = await migratedDatabase('lockdb');
      const ds = new DataSource({ type: 'postgres', url, migrations: MIGRATIONS.lockdb });
      await ds.initialize();
      let refused: unknown;
      try {
        const later = (MIGRATIONS.lockdb as unknown[]).length - 1;
        for (let i = 0; i < later; i++) await ds.undoLastMigration({ transaction: 'each' });
        refused = await ds.undoLastMigration({ transaction: 'each' }).catch((err: unknown) => err);
      } finally {
        await ds.destroy();
      }
      expect(refused).toBeInstanceOf(Error);
      const pattern = out.stdout
        .trim()
        .split('...')
        .map((part) =>
          part
            .replace(/\s+/g, ' ')
            .trim()
            .replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
        )
        .join('.*');
      expect((refused as Error).message.replace(/\s+/g, ' ')).toMatch(new RegExp(pattern));
      expect(await sql(url, `SELECT last_value FROM fencing_token_seq`)).toHaveLength(1);
    },
  },
  {
    block: "grep -E '^reconciler_(revocations_unfenced|fence_floor_raises_total)'",
    async prepare() {
      const accountId = await seedFundedAccount(dbUrl('paydb'));
      await fencedBy(accountId, (await revoked(accountId)).newTokenFloor);
      return {};
    },
    check(out) {
      ok(out);
      expect(out.stdout).toMatch(/^reconciler_revocations_unfenced \d+$/m);
      // One raised series per guard (payment-resource's fence, rail-proxy's mark).
      const raised =
        /^reconciler_fence_floor_raises_total\{guard="([a-z_]+)",result="raised"\} [1-9]/gm;
      expect(new Set([...out.stdout.matchAll(raised)].map((m) => m[1])).size).toBe(2);
    },
  },
  {
    block: '/v1/accounts/$ACCOUNT_ID/fence-floor',
    async prepare() {
      // A revocation's floor and the notice the lock-server signs over it (what GET
      // /v1/revocations lists); the reconciler is not given this account's revocation first.
      const accountId = await seedFundedAccount(dbUrl('paydb'));
      const floor = `${await freshToken()}`;
      const notice = testRevocationNotice({ key: `payout:${accountId}`, floor });
      return { env: { ACCOUNT_ID: accountId, FLOOR: floor, NOTICE: notice, OPERATOR } };
    },
    async check(out, env, again) {
      ok(out);
      const [pay, prx] = replies(out.stdout);
      expect(pay).toEqual({ status: 200, body: expect.objectContaining({ raised: true }) });
      expect(prx).toEqual({ status: 200, body: expect.objectContaining({ raised: true }) });
      expect(JSON.stringify([pay.body, prx.body])).toContain(`"${env.FLOOR}"`);
      // Repeating a raise is harmless: nothing moves.
      const twice = replies((await again(env)).stdout);
      expect(twice.map((r) => [r.status, r.body.raised])).toEqual([
        [200, false],
        [200, false],
      ]);
      // The notice is for this account's key: presented for another account, nothing moves.
      const other = replies((await again({ ...env, ACCOUNT_ID: 'acct-unknown1' })).stdout);
      expect(other.map((r) => [r.status, r.body.code, r.body.details?.reason])).toEqual([
        [403, 'PROOF_REJECTED', 'lock-key'],
        [403, 'PROOF_REJECTED', 'lock-key'],
      ]);
      // A floor of the operator's own, without the lock-server's notice: nothing moves.
      const own = replies((await again({ ...env, FLOOR: '9223372036854775807' })).stdout);
      expect(own.map((r) => [r.status, r.body.code, r.body.details?.reason])).toEqual([
        [403, 'PROOF_REJECTED', 'mismatch'],
        [403, 'PROOF_REJECTED', 'mismatch'],
      ]);
    },
  },
  {
    block: '/v1/accounts/$ACCOUNT_ID"',
    async prepare() {
      const accountId = await seedFundedAccount(dbUrl('paydb'));
      const { newTokenFloor } = await revoked(accountId);
      await fencedBy(accountId, newTokenFloor);
      return { env: { ACCOUNT_ID: accountId, FLOOR: newTokenFloor } };
    },
    check(out, env) {
      ok(out);
      const [account] = replies(out.stdout);
      expect(account.status).toBe(200);
      expect(BigInt(account.body.fence)).toBeGreaterThanOrEqual(BigInt(env.FLOOR));
    },
  },
  {
    block: "SELECT highest_token FROM rail_high_water WHERE account_id = 'ACCOUNT_ID';",
    async prepare() {
      const accountId = await seedFundedAccount(dbUrl('paydb'));
      const { newTokenFloor } = await revoked(accountId);
      await fencedBy(accountId, newTokenFloor);
      return { env: { FLOOR: newTokenFloor }, fill: { ACCOUNT_ID: accountId } };
    },
    check(out, env) {
      ok(out);
      expect(BigInt(out.stdout.trim())).toBeGreaterThanOrEqual(BigInt(env.FLOOR));
    },
  },
];

/** Waits until the reconciler raised both guards of a revoked payout key (one pass, 200 ms here). */
async function fencedBy(accountId: string, floor: string): Promise<void> {
  const atFloor = (v: string | null) => v !== null && BigInt(v) >= BigInt(floor);
  await waitFor(
    async () => atFloor(await highWater(accountId)) && atFloor(await accountFence(accountId)),
    20_000,
    'the reconciler to fence the revocation',
  );
}

async function accountFence(accountId: string): Promise<string> {
  const [row] = await sql(
    dbUrl('paydb'),
    `SELECT fence::text AS v FROM account WHERE account_id = $1`,
    [accountId],
  );
  return row.v;
}

async function highWater(accountId: string): Promise<string | null> {
  const found = await sql(
    dbUrl('proxydb'),
    `SELECT highest_token::text AS v FROM rail_high_water WHERE account_id = $1`,
    [accountId],
  );
  return found[0]?.v ?? null;
}

function blockWith(fragment: string): RunbookBlock {
  const b = blocks.find((x) => x.text.includes(fragment));
  if (!b) throw new Error(`no block with ${fragment}`);
  return b;
}

// ---- the tests ------------------------------------------------------------------------

const markdown = readFileSync(path.join(REPO_ROOT, DOC), 'utf8');
const { blocks, problems } = runbookBlocks(markdown);
const runs = (b: RunbookBlock) => b.kind !== 'cluster' || b.sql !== undefined;
const blocksOf = (c: Case) => blocks.filter((b) => runs(b) && b.text.includes(c.block));

describe('the marker rules', () => {
  it('accepts marked blocks and refuses unmarked, mismarked and inline runnable ones', () => {
    const md = [
      '<!-- runbook: cluster -->',
      '```sh',
      'kubectl -n dlock get pods',
      '```',
      '<!-- runbook: cluster -->',
      '```sh',
      'kubectl -n dlock port-forward svc/lock-server 8081:8081 &',
      'curl -s http://127.0.0.1:8081/health/live',
      '```',
      '```sql',
      'SELECT 1;',
      '```',
      '<!-- runbook: tested -->',
      '```sh',
      'gcloud sql instances list',
      '```',
      'Run `SELECT * FROM account;` in paydb.',
      '<!-- runbook: cluster -->',
      '```sh',
      "kubectl -n dlock run x -i -- psql <<'SQL'",
      'SELECT 1;',
      'SQL',
      '```',
    ].join('\n');
    expect(runbookBlocks(md).problems).toEqual([
      'line 6: marked cluster, but nothing in it needs a cluster: mark it tested and run it',
      'line 10: no <!-- runbook: tested|cluster|output --> marker above the block',
      'line 14: marked tested, but it calls a cluster tool: mark it cluster',
      'line 17: runnable command in running text, put it in a block: SELECT * FROM account;',
      'line 19: its SQL heredoc can run here: name the database (cluster sql=…)',
    ]);
    expect(
      namedEvents(
        'Find `event=fenced_out` and the `lock_revoked` log event, events `a_b`, `c` and\n' +
          '`d`; `grep -E \'"event":"(e|f_g)"\'`; not `h` here.',
      ),
    ).toEqual(['a_b', 'c', 'd', 'e', 'f_g', 'fenced_out', 'lock_revoked']);
  });
});

describe(DOC, () => {
  it('marks every block, and marks cluster only what needs a cluster', () => {
    expect(problems).toEqual([]);
    expect(blocks.length).toBeGreaterThan(10);
  });

  it('names only log events the code emits', () => {
    const events = namedEvents(markdown);
    expect(events.length).toBeGreaterThan(10);
    const source = productionSource();
    expect(events.filter((e) => !source.includes(`'${e}'`))).toEqual([]);
  });

  it('has a case for every block that runs here, and each case names one block', () => {
    const uncovered = blocks.filter((b) => runs(b) && !CASES.some((c) => b.text.includes(c.block)));
    expect(uncovered.map((b) => b.line)).toEqual([]);
    const ambiguous = CASES.filter((c) => blocksOf(c).length !== 1);
    expect(ambiguous.map((c) => c.block)).toEqual([]);
  });

  it.each(blocks.filter((b) => b.kind === 'cluster').map((b) => [b.line, b]))(
    'cluster block at line %i is valid bash',
    async (_line, b) => {
      const out = await run('bash', ['--norc', '-n'], {}, b.text);
      expect({ code: out.code, stderr: out.stderr }).toEqual({ code: 0, stderr: '' });
    },
  );

  it.each(CASES.flatMap((c) => blocksOf(c).map((b) => [b.line, c.block, b, c] as const)))(
    'block at line %i (%s) does what the runbook says',
    async (_line, _fragment, b, c) => {
      const { env = {}, fill = {} } = (await c.prepare?.()) ?? {};
      let out: Run;
      if (b.kind === 'output') out = { code: 0, stdout: b.text, stderr: '' };
      else if (b.kind === 'cluster' && b.sql)
        out = await psql(b.sql, fillSql(heredocs(b.text), fill), await psqlVars(b.text, env));
      else if (b.lang === 'sql' && b.sql)
        out = await psql(b.sql, fillSql(b.text, fill), {}, c.user);
      else out = await bash(localScript(b.text, env), env);
      await c.check(out, env, (e) => bash(localScript(b.text, e), e));
    },
  );
});
