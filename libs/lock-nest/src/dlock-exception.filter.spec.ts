import { Controller, Get, Module, Param, type INestApplication } from '@nestjs/common';
import { APP_FILTER, NestFactory } from '@nestjs/core';
import request from 'supertest';
import {
  ContentionError,
  BUILT_IN_ERROR_CODES,
  DlockError,
  FencedOutError,
  LockLostError,
  type ErrorCode,
  errorCodeSpec,
  errorCodes,
  isErrorCode,
  registerErrorCodes,
} from '@dlock/lock-api';
import { LockServerUnavailableError } from '@dlock/lock-client';
import { DlockExceptionFilter } from './dlock-exception.filter';

/**
 * What a caller of a team's service sees when a controller lets a DlockError
 * through (docs/extending.md): the code's status and the contract envelope,
 * over real HTTP through Nest's Express adapter.
 */
const THROWN: Record<string, () => Error> = {
  contended: () => new ContentionError('refund:r-1 is held by another worker'),
  lost: () => new LockLostError(),
  fenced: () =>
    new FencedOutError('a newer token wrote refund r-1', { details: { table: 'refund' } }),
  unreachable: () => new LockServerUnavailableError('connect', 'connect ECONNREFUSED'),
  throttled: () => new DlockError('CONTENTION_EXCEEDED', 'slow down', { retryAfterMillis: 250 }),
  plain: () => new Error('not a dlock error'),
};

@Controller()
class ThrowingController {
  @Get('throw/:what')
  throw(@Param('what') what: string): never {
    if (isErrorCode(what)) throw new DlockError(what, `a ${what}`);
    throw THROWN[what]();
  }
}

@Module({
  controllers: [ThrowingController],
  providers: [{ provide: APP_FILTER, useClass: DlockExceptionFilter }],
})
class AppModule {}

let app: INestApplication;

beforeAll(async () => {
  app = await NestFactory.create(AppModule, { logger: false });
  await app.init();
});

afterAll(async () => {
  await app?.close();
});

const get = (path: string) => request(app.getHttpServer()).get(path);
const TRACE = '0af7651916cd43dd8448eb211c80319c';

it.each(Object.keys(BUILT_IN_ERROR_CODES))(
  '%s answers its catalogue status with the envelope',
  async (code) => {
    const res = await get(`/throw/${code}`);
    expect(res.status).toBe(errorCodeSpec(code as ErrorCode).httpStatus);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({
      code,
      message: `a ${code}`,
      retrySafe: errorCodeSpec(code as ErrorCode).retrySafe,
      traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
  },
);

it("the SDK's errors: contention is 429 and retry-safe, a lost lock and a fence 409, details kept", async () => {
  expect((await get('/throw/contended')).body).toMatchObject({
    code: 'CONTENTION_EXCEEDED',
    retrySafe: true,
  });
  expect((await get('/throw/contended')).status).toBe(429);
  expect(await get('/throw/lost')).toMatchObject({
    status: 409,
    body: { code: 'LOCK_LOST', retrySafe: false },
  });
  expect(await get('/throw/fenced')).toMatchObject({
    status: 409,
    body: {
      code: 'FENCED_OUT',
      message: 'a newer token wrote refund r-1',
      details: { table: 'refund' },
    },
  });
});

it('an unreachable lock-server is 503 UNAVAILABLE, retry-safe, naming the peer', async () => {
  const res = await get('/throw/unreachable');
  expect(res.status).toBe(503);
  expect(res.body).toMatchObject({
    code: 'UNAVAILABLE',
    retrySafe: true,
    details: { peer: 'lock-server', phase: 'connect' },
  });
});

it("carries retryAfterMillis, and the caller's traceparent trace id", async () => {
  const res = await get('/throw/throttled').set('traceparent', `00-${TRACE}-b7ad6b7169203331-01`);
  expect(res.body).toEqual({
    code: 'CONTENTION_EXCEEDED',
    message: 'slow down',
    retrySafe: true,
    retryAfterMillis: 250,
    traceId: TRACE,
  });
});

it('leaves any other exception to Nest', async () => {
  const res = await get('/throw/plain');
  expect(res.status).toBe(500);
  expect(res.body).toEqual({ statusCode: 500, message: 'Internal server error' });
});

describe('a team\'s own error code (docs/extending.md, "Your own error codes")', () => {
  const REFUND_WINDOW_CLOSED = 'REFUND_WINDOW_CLOSED' as ErrorCode;

  it('cannot be thrown before the app registers it: a clear error, never a guessed status', () => {
    expect(isErrorCode(REFUND_WINDOW_CLOSED)).toBe(false);
    expect(() => new DlockError(REFUND_WINDOW_CLOSED, 'too late')).toThrow(
      /REFUND_WINDOW_CLOSED was never registered/,
    );
  });

  it('once registered, answers its own status and retry-safety in the contract envelope', async () => {
    registerErrorCodes({ REFUND_WINDOW_CLOSED: { httpStatus: 422, retrySafe: false } });
    expect(errorCodes()).toContain(REFUND_WINDOW_CLOSED);
    const res = await get(`/throw/${REFUND_WINDOW_CLOSED}`).set(
      'traceparent',
      `00-${TRACE}-b7ad6b7169203331-01`,
    );
    expect(res.status).toBe(422);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({
      code: 'REFUND_WINDOW_CLOSED',
      message: 'a REFUND_WINDOW_CLOSED',
      retrySafe: false,
      traceId: TRACE,
    });
  });

  it('registers again with the same meaning, never with another', () => {
    registerErrorCodes({ REFUND_WINDOW_CLOSED: { httpStatus: 422, retrySafe: false } });
    expect(() =>
      registerErrorCodes({ REFUND_WINDOW_CLOSED: { httpStatus: 409, retrySafe: false } }),
    ).toThrow(/already registered/);
    expect(() => registerErrorCodes({ FENCED_OUT: { httpStatus: 409, retrySafe: true } })).toThrow(
      /FENCED_OUT is already registered/,
    );
    expect(() =>
      registerErrorCodes({ 'refund-late': { httpStatus: 422, retrySafe: false } }),
    ).toThrow(/not UPPER_SNAKE/);
    expect(errorCodeSpec(REFUND_WINDOW_CLOSED)).toEqual({ httpStatus: 422, retrySafe: false });
  });
});
