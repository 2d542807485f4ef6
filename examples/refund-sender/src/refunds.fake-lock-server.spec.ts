// The team's own unit test on dlock's in-memory lock-server (docs/extending.md, "12. Testing").
// It sits in src/ because that is where `nest new` projects look for `*.spec.ts`; it uses only
// the runner's globals, so Jest and Vitest run it unchanged. test/medium/installed-packages.spec.ts
// runs it inside freshly made Nest 11 and Nest 12 projects.
import { Global, Module, type INestApplication } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { LockClient } from '@dlock/lock-client';
import { FakeLockServer } from '@dlock/lock-client/testing';
import { DlockExceptionFilter, LockClientModule } from '@dlock/lock-nest';
import { RefundModule } from './refund-sender.module';
import { MemoryRefundSink, RefundSink } from './refund-sink';

/** A refused grant never reaches the refund table: these cases need no database. */
@Global()
@Module({ providers: [{ provide: DataSource, useValue: {} }], exports: [DataSource] })
class NoDatabase {}

describe('refunds on FakeLockServer', () => {
  let server: FakeLockServer;
  let app: INestApplication;
  const sink = new MemoryRefundSink();

  beforeEach(async () => {
    server = new FakeLockServer();
    const moduleRef = await Test.createTestingModule({
      imports: [
        NoDatabase,
        LockClientModule.forRoot({
          baseUrl: 'http://lock-server.test',
          ownerId: 'refunds-test',
          transport: server.transport,
        }),
        RefundModule,
      ],
      providers: [{ provide: APP_FILTER, useClass: DlockExceptionFilter }],
    })
      .overrideProvider(RefundSink)
      .useValue(sink)
      .compile();
    app = await moduleRef.createNestApplication({ logger: false }).init();
  });

  afterEach(async () => {
    await app?.close();
    sink.delivered.clear();
  });

  it('another worker holds the refund: 429 CONTENTION_EXCEEDED, nothing paid', async () => {
    const other = await new LockClient({
      baseUrl: 'http://lock-server.test',
      ownerId: 'refunds-other',
      transport: server.transport,
    }).openSession();
    const held = await other.acquire('refund:r-1');
    const res = await request(app.getHttpServer()).post('/refunds/r-1/send');
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({ code: 'CONTENTION_EXCEEDED', retrySafe: true });
    expect(server.holder('refund:r-1')?.fencingToken).toBe(held.fencingToken);
    expect(sink.delivered.size).toBe(0);
    await other.close();
  });

  it('the lock-server cannot be reached: 503 UNAVAILABLE, nothing paid', async () => {
    server.down = true;
    const res = await request(app.getHttpServer()).post('/refunds/r-2/send');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ code: 'UNAVAILABLE', details: { peer: 'lock-server' } });
    expect(sink.delivered.size).toBe(0);
  });
});
