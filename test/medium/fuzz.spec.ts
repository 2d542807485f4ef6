// Seeded fuzz of every HTTP surface: malformed requests of many
// kinds (bodies of every type, size, depth and encoding; garbage in the
// protocol headers; broken framing) against every route of all six services.
// It fails on any 5xx, any error answer that is not the contract's envelope,
// a service that died, or a row that changed (every table of lockdb, paydb
// and proxydb, and the rail's journal, compared before and after).
// Replay a run: FUZZ_SEED=<printed seed> npx jest --ci --runInBand test/medium/fuzz.spec.ts
import { randomInt } from 'node:crypto';
import { readFileSync, existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { BUILT_IN_ERROR_CODES } from '@dlock/lock-api';
import { PAYOUT_ERROR_CODES } from '@dlock/payout-contract';
import {
  migratedDatabase,
  seedFundedAccount,
  seedPendingPayout,
  spawnApp,
  withClient,
  type RunningApp,
  scratchDir,
} from '@dlock/testing';
import { mulberry32 } from '@dlock/prng';

const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 1_500);
const CONCURRENCY = 6;
const SEED = Number(process.env.FUZZ_SEED ?? randomInt(1, 2 ** 31));

type Rand = () => number;
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

interface Route {
  app: string;
  method: string;
  /** `{id}` and friends are filled per request. */
  path: string;
  /** Takes a DTO body: it only ever gets an invalid one, so nothing may be written. */
  body: boolean;
}

const ROUTES: Route[] = [
  // lock-server L1-L8
  { app: 'lock-server', method: 'POST', path: '/v1/sessions', body: true },
  { app: 'lock-server', method: 'POST', path: '/v1/sessions/{session}/heartbeat', body: false },
  { app: 'lock-server', method: 'DELETE', path: '/v1/sessions/{session}', body: false },
  { app: 'lock-server', method: 'POST', path: '/v1/locks/{key}/acquire', body: true },
  { app: 'lock-server', method: 'POST', path: '/v1/locks/{key}/renew', body: true },
  { app: 'lock-server', method: 'DELETE', path: '/v1/locks/{key}{query}', body: false },
  { app: 'lock-server', method: 'GET', path: '/v1/locks/{key}', body: false },
  { app: 'lock-server', method: 'POST', path: '/v1/locks/{key}/revoke', body: true },
  // payment-resource P1-P8
  { app: 'payment-resource', method: 'GET', path: '/v1/payouts{query}', body: false },
  { app: 'payment-resource', method: 'POST', path: '/v1/payouts/{payout}/claim', body: true },
  { app: 'payment-resource', method: 'POST', path: '/v1/payouts/{payout}/post', body: true },
  { app: 'payment-resource', method: 'GET', path: '/v1/payouts/{payout}', body: false },
  {
    app: 'payment-resource',
    method: 'POST',
    path: '/v1/payouts/{payout}/rail-outcome',
    body: true,
  },
  { app: 'payment-resource', method: 'POST', path: '/v1/payouts/{payout}/abandon', body: true },
  { app: 'payment-resource', method: 'POST', path: '/v1/payouts/{payout}/resolve', body: true },
  { app: 'payment-resource', method: 'GET', path: '/v1/accounts/{account}', body: false },
  // the payouts API
  { app: 'payment-resource', method: 'POST', path: '/v1/accounts', body: true },
  { app: 'payment-resource', method: 'POST', path: '/v1/accounts/{account}/deposits', body: true },
  { app: 'payment-resource', method: 'POST', path: '/v1/payouts', body: true },
  // rail-proxy R1-R2
  { app: 'rail-proxy', method: 'POST', path: '/v1/rail/submissions', body: true },
  { app: 'rail-proxy', method: 'GET', path: '/v1/rail/submissions/{payout}', body: false },
  // rail-stub
  { app: 'rail-stub', method: 'POST', path: '/submit', body: true },
  { app: 'rail-stub', method: 'GET', path: '/lookup{query}', body: false },
  { app: 'rail-stub', method: 'GET', path: '/admin/faults', body: false },
  { app: 'rail-stub', method: 'POST', path: '/admin/faults', body: true },
  { app: 'rail-stub', method: 'GET', path: '/admin/stats', body: false },
  // reconciler, and every service's own health/metrics routes
  { app: 'reconciler', method: 'GET', path: '/v1/reconciler/report{query}', body: false },
  ...[
    'lock-server',
    'payment-resource',
    'rail-proxy',
    'rail-stub',
    'executor',
    'reconciler',
  ].flatMap((app) => [
    { app, method: 'GET', path: '/health/live', body: false },
    { app, method: 'GET', path: '/health/ready', body: false },
    { app, method: 'GET', path: '/metrics', body: false },
    { app, method: 'POST', path: '/nope/{key}', body: false },
  ]),
];

/** Values that must each be refused wherever the contract reads them. */
const GARBAGE = [
  '',
  ' ',
  '0',
  '-1',
  '00000001',
  '1.5',
  '1e3',
  '0x10',
  '9223372036854775808',
  '99999999999999999999999999999',
  '-9223372036854775809',
  'NaN',
  'null',
  'true',
  '[]',
  '{}',
  '%00',
  '\u00e9t\u00e9',
  'a'.repeat(300),
  'x'.repeat(5_000),
  '"quoted"',
  'line\tbreak',
];

function garbageJsonValue(r: Rand): unknown {
  return pick(r, [
    () => 2 ** 53 + 1,
    () => -(2 ** 60),
    () => 1e308,
    () => -0,
    () => 'x'.repeat(Math.floor(r() * 2_000)),
    () => null,
    () => true,
    () => [],
    () => ({}),
    () => [1, '2', null],
    () => ({ nested: { deeper: [{}] } }),
    () => pick(r, GARBAGE),
  ])();
}

/** Raw JSON texts the safe-integer range and JSON.stringify cannot produce. */
const HUGE_INTEGERS = ['9007199254740993', '-9007199254740993', '1' + '0'.repeat(400), '-0'];

const FIELDS = [
  'ownerId',
  'ttlMillis',
  'sessionId',
  'fencingToken',
  'token',
  'amountMinor',
  'currency',
  'payoutId',
  'accountId',
  'clientRef',
  'beneficiaryRef',
  'railReference',
  'outcome',
  'reason',
  'failureRate',
  'latencyMs',
  '__proto__',
  'constructor',
];

function nested(depth: number, r: Rand): string {
  const open = r() < 0.5 ? '[' : '{"a":';
  const close = open === '[' ? ']' : '}';
  return `{"x":${open.repeat(depth)}1${close.repeat(depth)}}`;
}

/** An invalid body (never a valid DTO: at least an unknown field, a wrong type or shape). */
function body(r: Rand): { text: string | Buffer; note: string } {
  const kind = Math.floor(r() * 12);
  switch (kind) {
    case 0:
      return { text: pick(r, HUGE_INTEGERS), note: 'bare huge integer' };
    case 1:
      return { text: JSON.stringify(garbageJsonValue(r)) ?? 'null', note: 'non-object JSON' };
    case 2:
      return { text: nested(65 + Math.floor(r() * 4_000), r), note: 'deep nesting' };
    case 3:
      return { text: '{"a":' + '['.repeat(Math.floor(r() * 3_000)), note: 'deep, truncated' };
    case 4: {
      const o: Record<string, unknown> = { __fuzz: 1 };
      for (let i = 0; i < 1 + r() * 5; i++) o[pick(r, FIELDS)] = garbageJsonValue(r);
      return { text: JSON.stringify(o), note: 'unknown field, wrong types' };
    }
    case 5: {
      const field = pick(r, FIELDS);
      return { text: `{"${field}":${pick(r, HUGE_INTEGERS)},"__fuzz":true}`, note: 'huge field' };
    }
    case 6:
      return { text: '{"a":1,"a":2}', note: 'duplicate key' };
    case 7:
      return { text: Buffer.from(Array.from({ length: 64 }, () => randomByte(r))), note: 'bytes' };
    case 8:
      return { text: `{"__fuzz":"${'y'.repeat(70_000)}"}`, note: 'over the size limit' };
    case 9:
      return {
        text: pick(r, ['{', '{"a":', '[1,]', "{'a':1}", 'NaN', '\u0000', '{"a":1} x']),
        note: 'malformed',
      };
    case 10:
      return { text: '\ufeff{"__fuzz":1}', note: 'BOM' };
    default:
      return { text: `{"__fuzz":"\\ud800","s":"\\u0000"}`, note: 'lone surrogate' };
  }
}

function randomByte(r: Rand): number {
  return Math.floor(r() * 256);
}

/** Header sets that abuse the contract's own headers and the transport's. */
function headers(r: Rand): Record<string, string> {
  const h: Record<string, string> = {};
  if (r() < 0.6) h['x-fencing-token'] = pick(r, [...GARBAGE, '5', '9223372036854775807']);
  if (r() < 0.6) h['x-owner-id'] = pick(r, [...GARBAGE, 'worker-a']);
  if (r() < 0.6) h['x-idempotency-key'] = pick(r, [...GARBAGE, 'payout-1']);
  if (r() < 0.3)
    h.traceparent = pick(r, [
      '00-zz-00-01',
      '00-' + '0'.repeat(32) + '-' + '1'.repeat(16) + '-01',
      'x',
    ]);
  if (r() < 0.5) {
    h['content-type'] = pick(r, [
      'application/json',
      'application/json; charset=utf-16',
      'application/json; charset=klingon',
      'text/plain',
      'multipart/form-data; boundary=x',
      'application/x-www-form-urlencoded',
      '*/*',
      '',
    ]);
  }
  return h;
}

const ENCODINGS = ['gzip', 'deflate', 'br', 'x-gzip', 'compress', 'identity, gzip', 'GZIP', 'zstd'];

interface Raw {
  bytes: Buffer;
  /** Framing that leaves the server waiting for bytes that never come: no answer is fine. */
  mayNotAnswer: boolean;
  note: string;
}

/** The message framing: honest, or one of six ways to lie about the body's length. */
function frame(
  framing: number,
  payload: Buffer,
  r: Rand,
): { head: string; body: Buffer; mayNotAnswer: boolean; note: string } {
  let head = '';
  let note = '';
  let mayNotAnswer = false;
  let bodyBytes = payload;
  switch (framing) {
    case -1:
      head += `content-length: ${payload.length}\r\n`;
      break;
    case 0: // claims more than is sent
      head += `content-length: ${payload.length + 10}\r\n`;
      mayNotAnswer = true;
      note += ' short body';
      break;
    case 1: // claims less: the rest reads as a second, garbage request
      head += `content-length: ${Math.max(0, payload.length - 3)}\r\n`;
      note += ' long body';
      break;
    case 2: // both framings at once
      head += `content-length: ${payload.length}\r\ntransfer-encoding: chunked\r\n`;
      bodyBytes = Buffer.concat([
        Buffer.from(`${payload.length.toString(16)}\r\n`),
        payload,
        Buffer.from('\r\n0\r\n\r\n'),
      ]);
      note += ' CL+TE';
      break;
    case 3: // a chunk size that lies
      head += 'transfer-encoding: chunked\r\n';
      bodyBytes = Buffer.concat([Buffer.from('zz\r\n'), payload, Buffer.from('\r\n0\r\n\r\n')]);
      note += ' bad chunk';
      break;
    case 4: // invalid bytes in a header
      head += `content-length: ${payload.length}\r\nx-owner-id: a\u0001b\r\nbad header\r\n`;
      note += ' bad header';
      break;
    default: // content-length that is no number
      head += `content-length: ${pick(r, ['-1', 'abc', '1e3', '99999999999999999999', '1, 2'])}\r\n`;
      mayNotAnswer = true;
      note += ' bad content-length';
      break;
  }
  return { head, body: bodyBytes, mayNotAnswer, note };
}

function request(route: Route, r: Rand, ids: Ids): Raw {
  const p = route.path
    .replace('{session}', pick(r, [ids.uuid(), 'not-a-uuid', '%zz', '..%2f..', 'x'.repeat(600)]))
    .replace('{key}', pick(r, ['account:fuzz-1', '%', '%E0%A4%A', 'a%00b', 'k'.repeat(2_000), '*']))
    .replace('{payout}', pick(r, [ids.payoutId, ids.uuid(), 'NOT-A-UUID', '%ff', '0']))
    .replace('{account}', pick(r, [ids.accountId, '../etc', '%c0%ae', 'a'.repeat(100)]))
    .replace(
      '{query}',
      pick(r, [
        '',
        '?state=PENDING&limit=1e3',
        '?state=PENDING&state=CLAIMED',
        '?limit=-1',
        '?clientRef=%zz',
        '?clientRef=' + 'c'.repeat(3_000),
        '?sessionId=nope&x=1',
        '?a[b][c][d][e][f]=1',
        '?%%%',
        '?state=' + encodeURIComponent(pick(r, GARBAGE)),
      ]),
    );
  let method = route.method;
  if (r() < 0.08) method = pick(r, ['PUT', 'PATCH', 'OPTIONS', 'HEAD', 'DELETE', 'GET', 'POST']);
  const h = headers(r);
  // L1 needs nothing but an owner: an empty or whitespace body (a framing case can
  // cut it to that) with a valid X-Owner-Id is a valid request, so here the header
  // is always one L1 must refuse, or absent.
  if (route.method === 'POST' && route.path === '/v1/sessions') {
    if (r() < 0.5) delete h['x-owner-id'];
    else h['x-owner-id'] = pick(r, ['', 'a'.repeat(300), 'line\tbreak', '\u00e9t\u00e9']);
  }
  let payload: Buffer = Buffer.alloc(0);
  let note = '';
  const wantsBody = route.body || r() < 0.3;
  if (wantsBody) {
    const b = body(r);
    payload = Buffer.isBuffer(b.text) ? b.text : Buffer.from(b.text, 'utf8');
    note = b.note;
    h['content-type'] ??= 'application/json';
  }
  if (r() < 0.15) {
    h['content-encoding'] = pick(r, ENCODINGS);
    const shape = r();
    if (shape < 0.3) payload = Buffer.alloc(0);
    else if (shape < 0.5) payload = gzipSync(payload); // a real compressed body is refused too
    note += ` content-encoding ${h['content-encoding']}`;
  }
  let framing = r() < 0.15 ? Math.floor(r() * 6) : -1;
  if (route.body && payload.length === 0 && framing < 0) framing = 0; // body routes never get a valid empty body
  let head = `${method} ${p} HTTP/1.1\r\nhost: fuzz\r\nconnection: close\r\n`;
  for (const [k, v] of Object.entries(h)) head += `${k}: ${v}\r\n`;
  const framed = frame(framing, payload, r);
  head += framed.head;
  const bodyBytes = framed.body;
  const mayNotAnswer = framed.mayNotAnswer;
  note += framed.note;
  const bytes = Buffer.concat([Buffer.from(head + '\r\n', 'latin1'), bodyBytes]);
  return { bytes, mayNotAnswer, note: `${method} ${p.slice(0, 80)} [${note.trim()}]` };
}

interface Answer {
  status: number | null;
  headers: string;
  body: string;
}

/**
 * Sends raw bytes and reads until the server closes (connection: close) or 5 s
 * pass; a request that leaves the server waiting for more is ended after 300 ms.
 */
function send(port: number, bytes: Buffer, hangs: boolean): Promise<Answer> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    const chunks: Buffer[] = [];
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(text);
      const head = split >= 0 ? text.slice(0, split) : text;
      let rest = split >= 0 ? text.slice(split + 4) : '';
      if (/transfer-encoding: chunked/i.test(head)) rest = dechunk(rest);
      const length = /content-length: (\d+)/i.exec(head);
      if (length) rest = Buffer.from(rest).subarray(0, Number(length[1])).toString('utf8');
      resolve({ status: status ? Number(status[1]) : null, headers: head, body: rest });
    };
    const timer = setTimeout(finish, 5_000);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', finish);
    socket.on('close', finish);
    // No half-close: node aborts a request whose client ended its side before the answer.
    socket.write(bytes);
    if (hangs) setTimeout(() => socket.end(), 300);
  });
}

function dechunk(text: string): string {
  let out = '';
  let rest = text;
  for (;;) {
    const eol = rest.indexOf('\r\n');
    if (eol < 0) return out;
    const size = parseInt(rest.slice(0, eol), 16);
    if (!size) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}

const ENVELOPE_KEYS = new Set([
  'code',
  'message',
  'retrySafe',
  'retryAfterMillis',
  'details',
  'traceId',
]);

/** Why the answer breaks the contract, or null when it keeps it. */
function violation(app: string, raw: Raw, method: string, a: Answer): string | null {
  if (a.status === null) return raw.mayNotAnswer ? null : 'no answer';
  // An unready service's readiness probe is its only legitimate 5xx (the executor has no lock session here).
  const unready =
    app === 'executor' && a.status === 503 && /^(GET|HEAD) \/health\/ready /.test(raw.note);
  if (a.status >= 500 && !unready) return `status ${a.status}: ${a.body.slice(0, 300)}`;
  if (a.status < 400 || method === 'HEAD') return null;
  let env: Record<string, unknown>;
  try {
    env = JSON.parse(a.body) as Record<string, unknown>;
  } catch {
    return `status ${a.status} without a JSON envelope: ${JSON.stringify(a.body.slice(0, 200))}`;
  }
  const ok =
    typeof env === 'object' &&
    env !== null &&
    Object.keys(env).every((k) => ENVELOPE_KEYS.has(k)) &&
    Object.hasOwn({ ...BUILT_IN_ERROR_CODES, ...PAYOUT_ERROR_CODES }, env.code as string) &&
    typeof env.message === 'string' &&
    typeof env.retrySafe === 'boolean' &&
    typeof env.traceId === 'string' &&
    /^[0-9a-f]{32}$/.test(env.traceId);
  return ok ? null : `status ${a.status} with a non-envelope body: ${a.body.slice(0, 300)}`;
}

interface Ids {
  payoutId: string;
  accountId: string;
  uuid(): string;
}

const RECONCILER_OWNER = 'fuzz-reconciler';

async function snapshot(dbs: string[], journal: string): Promise<string> {
  const parts: string[] = [];
  for (const url of dbs) {
    await withClient(url, async (c) => {
      const { rows: tables } = await c.query<{ t: string }>(
        `SELECT tablename AS t FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`,
      );
      for (const { t } of tables) {
        // The reconciler's own lock session and token probe (docs/reconciler.md) move
        // on their own schedule; nothing the fuzz sends can touch them.
        const { rows } = await c.query(
          `SELECT to_jsonb(x)::text AS j FROM "${t}" x
            WHERE to_jsonb(x)->>'owner_id' IS DISTINCT FROM $1 ORDER BY 1`,
          [RECONCILER_OWNER],
        );
        parts.push(`${t}: ${rows.map((row: { j: string }) => row.j).join('\n')}`);
      }
    });
  }
  parts.push(`journal: ${existsSync(journal) ? readFileSync(journal, 'utf8') : ''}`);
  return parts.join('\n');
}

describe(`fuzz: malformed requests to every route of every service (FUZZ_SEED=${SEED})`, () => {
  const apps = new Map<string, RunningApp>();
  let dbs: string[];
  let journal: string;
  let ids: Ids;

  beforeAll(async () => {
    const [lockdb, paydb, proxydb] = await Promise.all([
      migratedDatabase('lockdb'),
      migratedDatabase('paydb'),
      migratedDatabase('proxydb'),
    ]);
    dbs = [lockdb, paydb, proxydb];
    const accountId = await seedFundedAccount(paydb);
    const payoutId = await seedPendingPayout(paydb, accountId);
    const r = mulberry32(SEED ^ 0x5eed);
    ids = {
      accountId,
      payoutId,
      uuid: () =>
        'xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx'.replace(/x/g, () =>
          Math.floor(r() * 16).toString(16),
        ),
    };
    journal = path.join(scratchDir('fuzz-stub-'), 'journal.jsonl');
    const [lock, payment, stub] = await Promise.all([
      spawnApp('lock-server', { LOCK_BACKEND: 'pg', LOCKDB_URL: lockdb }),
      spawnApp('payment-resource', { PAYDB_URL: paydb }),
      spawnApp('rail-stub', { RAIL_STUB_JOURNAL_PATH: journal, RAIL_STUB_JOURNAL_FSYNC: 'false' }),
    ]);
    const [proxy, executor, reconciler] = await Promise.all([
      spawnApp('rail-proxy', { PROXYDB_URL: proxydb, RAIL_STUB_URL: stub.url }),
      // Its peers are unreachable: the executor must not act on the seeded payout.
      spawnApp('executor', {
        OWNER_ID: 'fuzz-executor',
        LOCK_SERVER_URL: 'http://127.0.0.1:9',
        PAYMENT_RESOURCE_URL: 'http://127.0.0.1:9',
        RAIL_PROXY_URL: 'http://127.0.0.1:9',
      }),
      spawnApp('reconciler', {
        OWNER_ID: RECONCILER_OWNER,
        PAYDB_URL: paydb,
        PROXYDB_URL: proxydb,
        LOCK_SERVER_URL: lock.url,
        PAYMENT_RESOURCE_URL: payment.url,
        RAIL_STUB_URL: stub.url,
        RECONCILER_INTERVAL_MS: '3600000',
        RECONCILER_CHECK_INTERVAL_MS: '3600000',
      }),
    ]);
    for (const app of [lock, payment, stub, proxy, executor, reconciler]) apps.set(app.name, app);
  });
  afterAll(async () => {
    await Promise.all([...apps.values()].map((a) => a.stop()));
  });

  it(`answers ${REQUESTS} malformed requests with 4xx envelopes and changes nothing`, async () => {
    console.log(`fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED})`);
    const before = await snapshot(dbs, journal);
    const r = mulberry32(SEED);
    const plan = Array.from({ length: REQUESTS }, () => {
      const route = pick(r, ROUTES);
      return { route, raw: request(route, r, ids) };
    });
    const failures: string[] = [];
    const statuses = new Map<string, number>();
    let next = 0;
    const worker = async () => {
      while (next < plan.length) {
        const { route, raw } = plan[next++];
        const app = apps.get(route.app)!;
        const answer = await send(app.port, raw.bytes, raw.mayNotAnswer);
        const method = raw.bytes.toString('latin1', 0, 8).split(' ')[0];
        const key = `${route.app} ${answer.status ?? 'none'}`;
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
        const why = violation(route.app, raw, method, answer);
        if (why) failures.push(`${route.app} ${raw.note}: ${why}`);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    console.log(`fuzz seed ${SEED}: ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);

    for (const app of apps.values()) {
      expect({ app: app.name, exit: app.proc.exitCode, signal: app.proc.signalCode }).toEqual({
        app: app.name,
        exit: null,
        signal: null,
      });
      expect((await fetch(`${app.url}/health/live`)).status).toBe(200);
    }
    expect(failures.slice(0, 20)).toEqual([]);
    expect(await snapshot(dbs, journal)).toBe(before);
  }, 180_000);
});
