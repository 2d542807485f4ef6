import { Global, Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { setTimeout as sleepFor } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { LockClient, LockLostError, type LockHandle } from '@dlock/lock-client';
import {
  LOCK_CLIENT_EVENTS,
  LockClientModule,
  LockSessionHealthIndicator,
  LockSessionKeeper,
  type LockClientModuleOptions,
} from '@dlock/lock-nest';
import { SafetyEvents, sessionLossReporter } from '@dlock/observability';
import {
  http,
  migratedDatabase,
  spawnApp,
  testTokenProvider,
  waitFor,
  type RunningApp,
} from '@dlock/testing';

/**
 * LockClientModule in a real Nest application context against a real
 * lock-server process (pg backend) over real HTTP: one shared session,
 * withLock's release on every path, loss reaching the callback through
 * handle.signal and SafetyEvents, the session closed at shutdown, and the
 * health indicator following the lock-server.
 */
jest.setTimeout(60_000);

const OWNER = 'lock-nest-test';
let server: RunningApp;
let lockdb: string;

beforeAll(async () => {
  lockdb = await migratedDatabase('lockdb');
  server = await spawnApp('lock-server', { LOCKDB_URL: lockdb, LOCK_BACKEND: 'pg' });
});

afterAll(async () => {
  await server?.stop();
});

/** SafetyEvents on a private registry, visible app-wide and wired as ObservabilityModule does. */
@Global()
@Module({
  providers: [
    { provide: SafetyEvents, useFactory: () => new SafetyEvents(new Registry()) },
    { provide: LOCK_CLIENT_EVENTS, useFactory: sessionLossReporter, inject: [SafetyEvents] },
  ],
  exports: [SafetyEvents, LOCK_CLIENT_EVENTS],
})
class TestSafetyModule {}

/** Two feature services in another module, each injecting the keeper. */
@Injectable()
class RefundJob {
  constructor(readonly locks: LockSessionKeeper) {}
}
@Injectable()
class ReportJob {
  constructor(readonly locks: LockSessionKeeper) {}
}
@Module({ providers: [RefundJob, ReportJob] })
class FeatureModule {}

/** The app as a team writes it: options from ConfigService, via forRootAsync. */
async function start(
  url: string,
  extra: Partial<LockClientModuleOptions> = {},
): Promise<INestApplicationContext> {
  @Module({
    imports: [
      TestSafetyModule,
      ConfigModule.forRoot({
        ignoreEnvFile: true,
        load: [() => ({ LOCK_SERVER_URL: url, OWNER_ID: OWNER })],
      }),
      LockClientModule.forRootAsync({
        imports: [ConfigModule],
        inject: [ConfigService],
        useFactory: (config: ConfigService): LockClientModuleOptions => ({
          baseUrl: config.getOrThrow<string>('LOCK_SERVER_URL'),
          ownerId: config.getOrThrow<string>('OWNER_ID'),
          token: testTokenProvider(OWNER),
          sessionTtlMs: 3_000,
          lockTtlMs: 3_000,
          ...extra,
        }),
      }),
      FeatureModule,
    ],
  })
  class AppModule {}
  return NestFactory.createApplicationContext(AppModule, { logger: false });
}

async function lockInfo(key: string) {
  const res = await http('GET', `${server.url}/v1/locks/${key}`);
  expect(res.status).toBe(200);
  return res.body as { key: string; held: boolean; fencingToken?: string; ownerId?: string };
}

async function sessionLostCount(app: INestApplicationContext): Promise<number> {
  const metric = await app.get(SafetyEvents).sessionLostTotal.get();
  return metric.values[0]?.value ?? 0;
}

describe('with the lock-server up', () => {
  let app: INestApplicationContext;
  let locks: LockSessionKeeper;

  beforeAll(async () => {
    app = await start(server.url);
    locks = app.get(LockSessionKeeper);
  });

  afterAll(async () => {
    await app?.close();
  });

  it('one session per process: every injector gets the same keeper and session', async () => {
    const refunds = app.get(RefundJob).locks;
    const reports = app.get(ReportJob).locks;
    expect(refunds).toBe(reports);
    expect(refunds).toBe(locks);
    expect(app.get(LockClient).ownerId).toBe(OWNER);
    const [a, b] = await Promise.all([refunds.session(), reports.session()]);
    expect(a).toBe(b);
    expect(a.state).toBe('open');
    expect(a.ownerId).toBe(OWNER);
    await expect(locks.withLock('ln:shared', async (h) => h.sessionId)).resolves.toBe(a.sessionId);
  });

  it('withLock passes the granted handle and releases after success', async () => {
    const result = await locks.withLock('ln:ok', async (handle) => {
      expect(await lockInfo('ln:ok')).toMatchObject({
        held: true,
        ownerId: OWNER,
        fencingToken: handle.fencingToken.toString(),
      });
      return `sent under ${handle.fencingToken}`;
    });
    expect(result).toMatch(/^sent under \d+$/);
    expect(await lockInfo('ln:ok')).toEqual({ key: 'ln:ok', held: false, waiterCount: 0 });
  });

  it('withLock releases when the callback throws, and rethrows its error', async () => {
    const boom = new Error('side effect failed');
    await expect(
      locks.withLock('ln:throws', async () => {
        expect((await lockInfo('ln:throws')).held).toBe(true);
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await lockInfo('ln:throws')).toEqual({ key: 'ln:throws', held: false, waiterCount: 0 });
  });

  it('an operator revoke mid-callback: the next renew fails, handle.signal aborts, the key is freed', async () => {
    const seen: { aborted: boolean; reason: unknown }[] = [];
    await expect(
      locks.withLock('ln:revoked', async (handle) => {
        const res = await http('POST', `${server.url}/v1/locks/ln:revoked/revoke`, {
          body: {
            operator: 'lock-nest-test-operator',
            reason: 'test revoke',
            expectedToken: handle.fencingToken.toString(),
          },
        });
        expect(res.status).toBe(200);
        await handle.renew().finally(() => {
          seen.push({ aborted: handle.signal.aborted, reason: handle.signal.reason });
        });
        return 'unreachable: the renew must fail';
      }),
    ).rejects.toBeInstanceOf(LockLostError);
    expect(seen).toHaveLength(1);
    expect(seen[0].aborted).toBe(true);
    expect(seen[0].reason).toBeInstanceOf(LockLostError);
    expect((await lockInfo('ln:revoked')).held).toBe(false);
  });

  it('withLock({ renew: true }) holds the lock through work longer than its lease, then releases', async () => {
    // lockTtlMs 3 s: without renewing, the lease ends locally at ≈ 2.1 s (margin 0.3).
    const token = await locks.withLock(
      'ln:renewed',
      async (handle) => {
        await sleepFor(5_000, undefined, { signal: handle.signal });
        handle.checkStillHeld();
        expect(await lockInfo('ln:renewed')).toMatchObject({
          held: true,
          fencingToken: handle.fencingToken.toString(),
        });
        return handle.fencingToken;
      },
      { renew: true },
    );
    expect(token).toBeGreaterThan(0n);
    expect(await lockInfo('ln:renewed')).toEqual({
      key: 'ln:renewed',
      held: false,
      waiterCount: 0,
    });
  });

  it('withLock({ renew: true }) after an operator revoke: the next renew aborts the work', async () => {
    await expect(
      locks.withLock(
        'ln:renew-revoked',
        async (handle) => {
          const res = await http('POST', `${server.url}/v1/locks/ln:renew-revoked/revoke`, {
            body: {
              operator: 'lock-nest-test-operator',
              reason: 'test revoke',
              expectedToken: handle.fencingToken.toString(),
            },
          });
          expect(res.status).toBe(200);
          // Ends when handle.signal aborts: the renew a third of the TTL in answers LOCK_LOST.
          await sleepFor(20_000, undefined, { signal: handle.signal }).catch(() =>
            handle.signal.throwIfAborted(),
          );
          return 'unreachable: the work must stop';
        },
        { renew: true },
      ),
    ).rejects.toMatchObject({
      code: 'LOCK_LOST',
      // The renew's answer, not the local deadline (≈ 2.1 s) running out.
      details: { reason: 'lock_lost' },
    });
  });

  it('a lease that runs out mid-callback aborts handle.signal; the side effect never runs; SafetyEvents counts it', async () => {
    const before = await sessionLostCount(app);
    const effects: string[] = [];
    let held: LockHandle | undefined;
    await expect(
      locks.withLock(
        'ln:expires',
        async (handle) => {
          held = handle;
          // Work that outlasts the lease (1 s × 0.7 locally) and waits on the handle's signal.
          await sleepFor(20_000, undefined, { signal: handle.signal });
          effects.push('sent');
        },
        { ttlMs: 1_000 },
      ),
    ).rejects.toMatchObject({ name: 'AbortError', cause: expect.any(LockLostError) });
    expect(effects).toEqual([]);
    expect(held?.state).toBe('lost');
    expect(await sessionLostCount(app)).toBe(before + 1);
    // The session itself lives on: only the lock was lost.
    expect(locks.isOpen).toBe(true);
  });

  it('the health indicator is up while a session is open', () => {
    expect(app.get(LockSessionHealthIndicator).isHealthy()).toEqual({
      lockSession: { status: 'up' },
    });
  });
});

it('opened at bootstrap when asked; closed at shutdown with its locks, after which the server reports it CLOSED', async () => {
  const app = await start(server.url, { openAtBootstrap: true });
  const locks = app.get(LockSessionKeeper);
  expect(locks.isOpen).toBe(true);
  const session = await locks.session();
  const handle = await session.acquire('ln:at-shutdown');
  expect((await lockInfo('ln:at-shutdown')).held).toBe(true);
  await app.close();
  expect(locks.isOpen).toBe(false);
  expect(handle.state).toBe('lost');
  expect(await lockInfo('ln:at-shutdown')).toEqual({
    key: 'ln:at-shutdown',
    held: false,
    waiterCount: 0,
  });
  const beat = await http('POST', `${server.url}/v1/sessions/${session.sessionId}/heartbeat`, {
    headers: { 'x-owner-id': OWNER },
  });
  expect([beat.status, beat.body.code, beat.body.details]).toEqual([
    410,
    'SESSION_EXPIRED',
    { state: 'CLOSED' },
  ]);
  // Fail closed after shutdown: a typed error, never a grant-less pass.
  await expect(locks.withLock('ln:after', async () => 'ran')).rejects.toMatchObject({
    code: 'UNAVAILABLE',
  });
});

it('the lock-server goes away: health goes down, withLock fails closed; it comes back: a new session', async () => {
  const own = await spawnApp('lock-server', { LOCKDB_URL: lockdb, LOCK_BACKEND: 'pg' });
  const app = await start(own.url, { sessionTtlMs: 2_000 });
  let again: RunningApp | undefined;
  try {
    const locks = app.get(LockSessionKeeper);
    const health = app.get(LockSessionHealthIndicator);
    const first = await locks.session();
    expect(health.isHealthy()).toEqual({ lockSession: { status: 'up' } });
    await own.stop();
    // The session's local deadline (2 s × 0.7 after the last heartbeat) passes; no new one opens.
    await waitFor(
      async () => health.isHealthy().lockSession.status === 'down',
      20_000,
      'the indicator to go down',
    );
    expect(health.isHealthy()).toEqual({
      lockSession: { status: 'down', message: 'no open lock-server session' },
    });
    expect(first.state).toBe('lost');
    const ran: string[] = [];
    await expect(locks.withLock('ln:down', async () => void ran.push('ran'))).rejects.toMatchObject(
      {
        code: 'UNAVAILABLE',
      },
    );
    expect(ran).toEqual([]);
    // Same port, same database: the keeper opens a fresh session on the next use.
    again = await spawnApp(
      'lock-server',
      { LOCKDB_URL: lockdb, LOCK_BACKEND: 'pg' },
      { port: own.port },
    );
    // The probe itself starts the new session; the next probe sees it.
    await waitFor(
      async () => health.isHealthy().lockSession.status === 'up',
      20_000,
      'the indicator to come back up',
    );
    const sessionId = await locks.withLock('ln:back', async (h) => h.sessionId);
    expect(sessionId).not.toBe(first.sessionId);
  } finally {
    await app.close();
    await own.stop();
    await again?.stop();
  }
});
