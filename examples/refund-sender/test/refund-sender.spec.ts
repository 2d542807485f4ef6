import { ConfigService } from '@nestjs/config';
import { Test, type TestingModule } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { LockLostError } from '@dlock/lock-client';
import { LockSessionKeeper } from '@dlock/lock-nest';
import {
  createDatabase,
  http,
  migratedDatabase,
  spawnApp,
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
 */
jest.setTimeout(60_000);

let server: RunningApp;
let databaseUrl: string;
let db: DataSource;
const sink = new MemoryRefundSink();
const apps: TestingModule[] = [];

async function sender(ownerId: string): Promise<TestingModule> {
  const config = new ConfigService({
    LOCK_SERVER_URL: server.url,
    OWNER_ID: ownerId,
    AUTH_TOKEN_DIR: await testTokenDir(ownerId),
    REFUNDS_DATABASE_URL: databaseUrl,
  });
  const app = await Test.createTestingModule({ imports: [RefundSenderAppModule] })
    .overrideProvider(ConfigService)
    .useValue(config)
    .overrideProvider(RefundSink)
    .useValue(sink)
    .setLogger({ log() {}, error() {}, warn() {} })
    .compile();
  apps.push(app);
  return app.init();
}

beforeAll(async () => {
  const lockdb = await migratedDatabase('lockdb');
  server = await spawnApp('lock-server', { LOCKDB_URL: lockdb, LOCK_BACKEND: 'pg' });
  databaseUrl = await createDatabase('refunds');
  db = new DataSource({ type: 'postgres', url: databaseUrl, migrations: REFUND_MIGRATIONS });
  await db.initialize();
  expect((await db.runMigrations()).map((m) => m.name)).toEqual(['RefundTable1764600000000']);
});

afterAll(async () => {
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
