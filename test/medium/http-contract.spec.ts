import { Body, Controller, Get, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { IsString, MaxLength } from 'class-validator';
import { LoggerModule } from 'nestjs-pino';
import { DlockError } from '@dlock/lock-api';
import { FencingTokenParam, applyHttpContract } from '@dlock/http-contract';
import { http } from '@dlock/testing';

class EchoBody {
  @IsString()
  @MaxLength(8)
  name!: string;
}

@Controller('v1')
class ProbeController {
  @Post('echo')
  echo(@Body() body: EchoBody, @FencingTokenParam() token: bigint) {
    return { name: body.name, token };
  }

  @Get('fenced')
  fenced() {
    throw new DlockError('FENCED_OUT', 'stale', {
      details: { presentedToken: '3', highestToken: '5' },
    });
  }

  @Get('contended')
  contended() {
    throw new DlockError('LOCK_CONTENDED', 'held', { retryAfterMillis: 250 });
  }

  @Get('boom')
  boom() {
    throw new Error('secret internals /etc/passwd');
  }
}

@Module({
  imports: [LoggerModule.forRoot({ pinoHttp: { level: 'silent' } })],
  controllers: [ProbeController],
})
class ProbeModule {}

describe('HTTP contract (envelope on every non-2xx)', () => {
  let app: NestExpressApplication;
  let base: string;
  const traceId = expect.stringMatching(/^[0-9a-f]{32}$/);

  beforeAll(async () => {
    app = await NestFactory.create<NestExpressApplication>(ProbeModule, {
      bodyParser: false,
      logger: false,
    });
    applyHttpContract(app);
    await app.listen(0, '127.0.0.1');
    const address = app.getHttpServer().address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  afterAll(() => app.close());

  it('keeps int64 digits in and out', async () => {
    const res = await http('POST', `${base}/v1/echo`, {
      headers: { 'x-fencing-token': '9007199254740993' },
      body: { name: 'ok' },
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.text).toBe('{"name":"ok","token":"9007199254740993"}');
  });

  it('echoes the W3C trace id of traceparent into the envelope', async () => {
    const res = await http('GET', `${base}/v1/fenced`, {
      headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
    });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      code: 'FENCED_OUT',
      message: 'stale',
      retrySafe: false,
      details: { presentedToken: '3', highestToken: '5' },
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    });
  });

  it('carries retryAfterMillis where the code has one', async () => {
    const res = await http('GET', `${base}/v1/contended`);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      code: 'LOCK_CONTENDED',
      message: 'held',
      retrySafe: true,
      retryAfterMillis: 250,
      traceId,
    });
  });

  it('maps an unknown route and a wrong method to 404 NOT_FOUND', async () => {
    for (const [method, path] of [
      ['GET', '/nope'],
      ['DELETE', '/v1/echo'],
    ]) {
      const res = await http(method, `${base}${path}`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(res.body).toEqual({
        code: 'NOT_FOUND',
        message: expect.any(String),
        retrySafe: false,
        traceId,
      });
    }
  });

  it('rejects malformed JSON, huge bodies and wrong types with VALIDATION_FAILED', async () => {
    const headers = { 'x-fencing-token': '5' };
    const malformed = await http('POST', `${base}/v1/echo`, { headers, rawBody: '{"name":' });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ code: 'VALIDATION_FAILED', retrySafe: false, traceId });

    const huge = await http('POST', `${base}/v1/echo`, {
      headers,
      rawBody: JSON.stringify({ name: 'x'.repeat(200_000) }),
    });
    expect(huge.status).toBe(413);
    expect(huge.body).toEqual({
      code: 'VALIDATION_FAILED',
      message: 'request body too large',
      retrySafe: false,
      traceId,
    });

    const wrongType = await http('POST', `${base}/v1/echo`, { headers, body: { name: 5 } });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.code).toBe('VALIDATION_FAILED');
    expect(wrongType.body.details.fields).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: 'name' })]),
    );

    const unknownField = await http('POST', `${base}/v1/echo`, {
      headers,
      body: { name: 'a', extra: 1 },
    });
    expect(unknownField.status).toBe(400);
    expect(unknownField.body.details.fields).toEqual(
      expect.arrayContaining([expect.objectContaining({ field: 'extra' })]),
    );
  });

  it('rejects a malformed token header with INVALID_TOKEN before the handler runs', async () => {
    for (const token of ['0', '01', '1e3', '0x10', '9223372036854775808', '']) {
      const res = await http('POST', `${base}/v1/echo`, {
        headers: { 'x-fencing-token': token },
        body: { name: 'a' },
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        code: 'INVALID_TOKEN',
        message: expect.any(String),
        retrySafe: false,
        details: { field: 'X-Fencing-Token' },
        traceId,
      });
    }
  });

  it('turns an unexpected error into a fixed 500 without internals', async () => {
    const res = await http('GET', `${base}/v1/boom`);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({
      code: 'INTERNAL',
      message: 'internal error',
      retrySafe: false,
      traceId,
    });
    expect(res.text).not.toContain('passwd');
  });
});
