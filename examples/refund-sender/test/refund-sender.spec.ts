import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { INestApplication } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import { Test, type TestingModule } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { LockLostError } from '@dlock/lock-client';
import { LockSessionKeeper } from '@dlock/lock-nest';
import {
  createDatabase,
  freePort,
  http,
  migratedDatabase,
  revocationNoticesUrl,
  spawnApp,
  testAuthEnv,
  testTokenDir,
  type RunningApp,
} from '@dlock/testing';
import {
  MemoryRefundSink,
  REFUND_MIGRATIONS,
  RefundSender,
  RefundSenderAppModule,
  RefundSink,
} from '../src';

/**
 * The worked example of docs/extending.md: two senders (two owners, two
 * sessions) against a real lock-server process and a real PostgreSQL with the
 * example's own table, made by its own migration. Each is the example's app
 * module with its configuration given as docs/extending.md ("Testing") shows;
 * one fake payment network is shared, so every payment either makes is counted.
 * The lock-server's FENCE_POINTS name the example as the fence point of
 * `refund:` keys (one instance listening), and a second fence point of
 * `invoice:` keys that only records what reaches it.
 */
jest.setTimeout(60_000);

let server: RunningApp;
let databaseUrl: string;
let db: DataSource;
const sink = new MemoryRefundSink();
const apps: TestingModule[] = [];

/** What the apps' loggers warned: the safety events' lines among them. */
const warnings: string[] = [];
const logger = { log() {}, error() {}, warn: (line: unknown) => void warnings.push(String(line)) };

let fencePoint: INestApplication;
let fencePointPort: number;
/** The `invoice:` fence point: every request that reaches it, which must be none. */
const invoiceRequests: string[] = [];
let invoices: Server;

async function compiled(ownerId: string): Promise<TestingModule> {
  const config = new ConfigService({
    LOCK_SERVER_URL: server.url,
    OWNER_ID: ownerId,
    AUTH_TOKEN_DIR: await testTokenDir(ownerId),
    REFUNDS_DATABASE_URL: databaseUrl,
    LOCK_SERVER_JWKS: (await testAuthEnv()).GRANT_JWKS,
  });
  return Test.createTestingModule({ imports: [RefundSenderAppModule] })
    .overrideProvider(ConfigService)
    .useValue(config)
    .overrideProvider(RefundSink)
    .useValue(sink)
    .setLogger(logger)
    .compile();
}

async function sender(ownerId: string): Promise<TestingModule> {
  const app = await compiled(ownerId);
  apps.push(app);
  return app.init();
}

beforeAll(async () => {
  invoices = createServer((req, res) => {
    invoiceRequests.push(`${req.method} ${req.url}`);
    res.writeHead(500).end();
  });
  await new Promise<void>((resolve) => invoices.listen(0, '127.0.0.1', resolve));
  const invoicesUrl = `http://127.0.0.1:${(invoices.address() as AddressInfo).port}`;
  fencePointPort = await freePort();
  const lockdb = await migratedDatabase('lockdb');
  server = await spawnApp('lock-server', {
    LOCKDB_URL: lockdb,
    LOCK_BACKEND: 'pg',
    // From configuration only: the lock-server knows no refund and no invoice.
    FENCE_POINTS: JSON.stringify([
      {
        name: 'refunds',
        prefix: 'refund:',
        url: revocationNoticesUrl(`http://127.0.0.1:${fencePointPort}`),
      },
      { name: 'invoices', prefix: 'invoice:', url: revocationNoticesUrl(invoicesUrl) },
    ]),
  });
  databaseUrl = await createDatabase('refunds');
  db = new DataSource({ type: 'postgres', url: databaseUrl, migrations: REFUND_MIGRATIONS });
  await db.initialize();
  expect((await db.runMigrations()).map((m) => m.name)).toEqual(['RefundTable1764600000000']);
  // The example as it runs: listening, so the lock-server can present its notices.
  fencePoint = (await compiled('refunds-fence-point')).createNestApplication({ logger });
  await fencePoint.listen(fencePointPort, '127.0.0.1');
});

afterAll(async () => {
  await fencePoint?.close();
  await new Promise((resolve) => (invoices ? invoices.close(resolve) : resolve(undefined)));
  for (const app of apps) await app.close();
  await db?.destroy();
  await server?.stop();
});

beforeEach(() => {
  sink.delivered.clear();
  sink.delayMs = 0;
});

async function refund(id: string) {
  const rows: unknown[] = await db.query(
    `SELECT id, status, fence, sent_token FROM refund WHERE id = $1`,
    [id],
  );
  return rows[0];
}

const newRefund = (id: string, amountMinor: number) =>
  db.query(`INSERT INTO refund (id, amount_minor) VALUES ($1, $2)`, [id, amountMinor]);

it('sends a refund once, fenced by its grant; a later send finds it sent and pays nothing', async () => {
  const a = await sender('refunds-a');
  await newRefund('r-1', 1_250);
  await expect(a.get(RefundSender).send('r-1')).resolves.toBe('sent');
  const row = (await refund('r-1')) as { fence: string };
  expect(row).toEqual({ id: 'r-1', status: 'SENT', fence: row.fence, sent_token: row.fence });
  expect([...sink.delivered]).toEqual([
    [`refund-r-1-${row.fence}`, { refundId: 'r-1', amountMinor: 1_250n }],
  ]);
  await expect(a.get(RefundSender).send('r-1')).resolves.toBe('already-sent');
  expect(sink.delivered.size).toBe(1);
});

it('a lock lost during the payment aborts it: nothing is paid, and the next grant pays once', async () => {
  const a = await sender('refunds-slow');
  const b = await sender('refunds-after');
  await newRefund('r-2', 4_000);
  // The network takes longer than the lease (1 s, given up locally after 0.7 s).
  sink.delayMs = 30_000;
  const failure = await a
    .get(RefundSender)
    .send('r-2', { ttlMs: 1_000 })
    .catch((err: unknown) => err);
  expect(failure).toMatchObject({ name: 'AbortError', cause: expect.any(LockLostError) });
  expect(sink.delivered.size).toBe(0);
  const lost = (await refund('r-2')) as { fence: string };
  expect(lost).toEqual({ id: 'r-2', status: 'PENDING', fence: lost.fence, sent_token: lost.fence });
  sink.delayMs = 0;
  await expect(b.get(RefundSender).send('r-2')).resolves.toBe('sent');
  const sent = (await refund('r-2')) as { fence: string };
  expect(BigInt(sent.fence)).toBeGreaterThan(BigInt(lost.fence));
  expect([...sink.delivered.keys()]).toEqual([`refund-r-2-${sent.fence}`]);
});

it('a stale holder (older token, unaware its lock was revoked) is fenced at the refund table', async () => {
  const stale = await sender('refunds-stale');
  const a = await sender('refunds-newer');
  await newRefund('r-3', 990);
  const session = await stale.get(LockSessionKeeper).session();
  const handle = await session.acquire('refund:r-3', { ttlMs: 30_000 });
  const revoked = await http('POST', `${server.url}/v1/locks/refund:r-3/revoke`, {
    body: {
      operator: 'refund-test-operator',
      reason: 'worker hung',
      expectedToken: `${handle.fencingToken}`,
    },
  });
  expect(revoked.status).toBe(200);
  // A newer grant writes the refund (its payment was cut short, so it is PENDING again).
  sink.delayMs = 30_000;
  await expect(a.get(RefundSender).send('r-3', { ttlMs: 1_000 })).rejects.toMatchObject({
    name: 'AbortError',
  });
  const newer = (await refund('r-3')) as { status: string; fence: string };
  expect(newer.status).toBe('PENDING');
  expect(BigInt(newer.fence)).toBeGreaterThan(handle.fencingToken);
  sink.delayMs = 0;
  // The stale holder still believes it holds the lock: only the table's fence stops it.
  expect(() => handle.checkStillHeld()).not.toThrow();
  await expect(stale.get(RefundSender).sendUnder(handle, 'r-3')).resolves.toBe('fenced');
  expect(await refund('r-3')).toEqual(newer);
  expect(sink.delivered.size).toBe(0);
  await handle.release();
});

it('a revoke raises the refund row’s fence before it answers: the revoked holder’s next write is refused at once', async () => {
  const revokedHolder = await sender('refunds-revoked');
  await newRefund('r-4', 700);
  await newRefund('r-5', 800);
  const untouched = await refund('r-5');
  const session = await revokedHolder.get(LockSessionKeeper).session();
  const handle = await session.acquire('refund:r-4', { ttlMs: 30_000 });
  const revoked = await http('POST', `${server.url}/v1/locks/refund:r-4/revoke`, {
    body: {
      operator: 'refund-test-operator',
      reason: 'worker hung',
      expectedToken: `${handle.fencingToken}`,
    },
  });
  // Only the fence points of the key's prefix were asked, and the refunds one raised its row.
  expect(revoked).toMatchObject({ status: 200, body: { guards: { refunds: 'raised' } } });
  const { newTokenFloor, guards } = revoked.body as { newTokenFloor: string; guards: object };
  expect(Object.keys(guards)).toEqual(['refunds']);
  expect(await refund('r-4')).toEqual({
    id: 'r-4',
    status: 'PENDING',
    fence: newTokenFloor,
    sent_token: null,
  });
  // Nobody newer wrote the row and the holder was not told: only the raised fence stops it.
  expect(() => handle.checkStillHeld()).not.toThrow();
  await expect(revokedHolder.get(RefundSender).sendUnder(handle, 'r-4')).resolves.toBe('fenced');
  expect(sink.delivered.size).toBe(0);
  expect((await refund('r-4')) as { fence: string }).toMatchObject({ fence: newTokenFloor });
  // The next holder's token exceeds the floor: the refund is sent once, under it.
  const next = await sender('refunds-next');
  await expect(next.get(RefundSender).send('r-4')).resolves.toBe('sent');
  expect(sink.delivered.size).toBe(1);
  // Another row, another prefix's fence point, and a key no fence point guards: untouched.
  const report = await session.acquire('report:r-4', { ttlMs: 30_000 });
  const unguarded = await http('POST', `${server.url}/v1/locks/report:r-4/revoke`, {
    body: { operator: 'refund-test-operator', reason: 'not fenced anywhere' },
  });
  expect(unguarded.status).toBe(200);
  expect(unguarded.body).not.toHaveProperty('guards');
  expect(await refund('r-5')).toEqual(untouched);
  expect(invoiceRequests).toEqual([]);
  await Promise.all([handle.release(), report.release()]);
});

/** The app's own safety counter as Prometheus scrapes it from the app's /metrics. */
async function needsCheckTotal(): Promise<string | undefined> {
  const res = await fetch(`http://127.0.0.1:${fencePointPort}/metrics`);
  return /^refund_needs_check_total (\S+)$/m.exec(await res.text())?.[1];
}

it('a refund an earlier grant left SENDING answers the example’s own code, 409 REFUND_NEEDS_CHECK, pays nothing, and is the example’s own safety event', async () => {
  // Its sender died mid-payment: whether the money moved is unknown, so no grant may send it again.
  await db.query(
    `INSERT INTO refund (id, amount_minor, status, fence, sent_token) VALUES ('r-6', 500, 'SENDING', 1, 1)`,
  );
  // Registered when the module loaded: its alert sees the series before the first event.
  expect(await needsCheckTotal()).toBe('0');
  const res = await http('POST', `http://127.0.0.1:${fencePointPort}/refunds/r-6/send`, {
    noAuth: true,
  });
  // The contract's envelope, with the status and retry-safety the code was registered with.
  expect(res).toMatchObject({
    status: 409,
    body: { code: 'REFUND_NEEDS_CHECK', retrySafe: false, details: { refundId: 'r-6' } },
  });
  expect(sink.delivered).toEqual(new Map());
  expect(await refund('r-6')).toEqual({
    id: 'r-6',
    status: 'SENDING',
    fence: '1',
    sent_token: '1',
  });
  expect(await needsCheckTotal()).toBe('1');
  expect(warnings.filter((line) => line.includes('event=refund_needs_check'))).toEqual([
    expect.stringMatching(
      /^refund left half-sent by an earlier grant: check the payment network event=refund_needs_check refundId=r-6 token=\d+$/,
    ),
  ]);
});
