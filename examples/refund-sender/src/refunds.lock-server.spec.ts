// The team's own test of the whole app against a real lock-server and its own migrated database
// (docs/extending.md, "12. Testing"): LOCK_SERVER_URL, OWNER_ID, AUTH_TOKEN_DIR and
// REFUNDS_DATABASE_URL come from the environment, as the app's own configuration does. Runner
// globals only, so Jest and Vitest run it unchanged; test/medium/installed-packages.spec.ts runs
// it inside freshly made Nest 11 and Nest 12 projects.
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import { FencedOutError } from '@dlock/lock-client';
import { LockSessionKeeper } from '@dlock/lock-nest';
import { fencedUpdate } from '@dlock/persistence';
import { RefundSenderAppModule } from './refund-sender.module';
import { RefundSender } from './refund-sender.service';
import { MemoryRefundSink, RefundSink } from './refund-sink';

describe('refunds against the lock-server', () => {
  const sink = new MemoryRefundSink();
  let app: INestApplication;
  let db: DataSource;

  const row = async (id: string) => {
    const rows = await db.query<{ status: string; fence: string; sent_token: string | null }[]>(
      `SELECT status, fence, sent_token FROM refund WHERE id = $1`,
      [id],
    );
    return rows[0];
  };

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [RefundSenderAppModule] })
      .overrideProvider(RefundSink)
      .useValue(sink)
      .compile();
    app = await moduleRef.createNestApplication({ logger: false }).init();
    db = app.get(DataSource);
    await db.query(`INSERT INTO refund (id, amount_minor) VALUES ('r-1', 1250), ('r-2', 990)`);
  }, 30_000);

  afterAll(async () => {
    await app?.close();
  });

  it('sends a refund once under withLock, its writes fenced by the grant', async () => {
    const sender = app.get(RefundSender);
    expect(await sender.send('r-1')).toBe('sent');
    const sent = await row('r-1');
    expect(sent).toEqual({ status: 'SENT', fence: sent.fence, sent_token: sent.fence });
    expect(BigInt(sent.fence)).toBeGreaterThan(0n);
    expect([...sink.delivered.keys()]).toEqual([`refund-r-1-${sent.fence}`]);
    expect(await sender.send('r-1')).toBe('already-sent');
    expect(sink.delivered.size).toBe(1);
  });

  it('a stale token is refused at the refund table', async () => {
    const locks = app.get(LockSessionKeeper);
    // An earlier grant on the key, then a newer one that sends the refund.
    const stale = await locks.withLock('refund:r-2', async (handle) => handle.fencingToken);
    expect(await app.get(RefundSender).send('r-2')).toBe('sent');
    const sent = await row('r-2');
    expect(BigInt(sent.fence)).toBeGreaterThan(stale);
    const write = await fencedUpdate(db.manager, {
      table: 'refund',
      id: 'r-2',
      token: stale,
      set: { status: 'PENDING' },
    });
    expect(write.passed).toBe(false);
    expect(await row('r-2')).toEqual(sent);
    const refusal = new FencedOutError(`refund r-2: token ${stale} is older than the row's`, {
      details: { key: 'refund:r-2', token: `${stale}`, fence: sent.fence },
    });
    expect(refusal).toMatchObject({ code: 'FENCED_OUT', retrySafe: false });
  });
});
