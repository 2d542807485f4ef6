import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { Body, Controller, Get, Module, Post } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { IsString, MaxLength } from 'class-validator';
import { LoggerModule } from 'nestjs-pino';
import { DlockError } from '@dlock/lock-api';
import { ForbiddenError } from '@dlock/identity';
import { FencingTokenParam, Operation, applyHttpContract } from '@dlock/http-contract';
import { http, registerAudience, testBearer, testRequestAuth } from '@dlock/testing';

class EchoBody {
  @IsString()
  @MaxLength(8)
  name!: string;
}

@Controller('v1')
class ProbeController {
  @Post('echo')
  @Operation('debug.spans')
  echo(@Body() body: EchoBody, @FencingTokenParam() token: bigint) {
    return { name: body.name, token };
  }

  @Post('ping')
  @Operation('debug.spans')
  ping() {
    return { pong: true };
  }

  @Get('fenced')
  @Operation('debug.spans')
  fenced() {
    throw new DlockError('FENCED_OUT', 'stale', {
      details: { presentedToken: '3', highestToken: '5' },
    });
  }

  @Get('contended')
  @Operation('debug.spans')
  contended() {
    throw new DlockError('LOCK_CONTENDED', 'held', { retryAfterMillis: 250 });
  }

  @Get('boom')
  @Operation('debug.spans')
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
    applyHttpContract(app, await testRequestAuth('probe'));
    await app.listen(0, '127.0.0.1');
    const address = app.getHttpServer().address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    registerAudience(base, 'probe');
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

  it('refuses any Content-Encoding with 415, empty, plain or really compressed, GET included', async () => {
    const cases: { encoding: string; body: Buffer }[] = [
      { encoding: 'deflate', body: Buffer.from('{"name":"ok"}') },
      { encoding: 'br', body: Buffer.alloc(0) },
      { encoding: 'gzip', body: gzipSync('{"name":"ok"}') },
    ];
    for (const c of cases) {
      const res = await fetch(`${base}/v1/echo`, {
        method: 'POST',
        headers: {
          'content-encoding': c.encoding,
          'content-type': 'application/json',
          'x-fencing-token': '5',
          authorization: await testBearer('operator', 'probe'),
        },
        body: c.body,
      });
      expect({ encoding: c.encoding, status: res.status, body: await res.json() }).toEqual({
        encoding: c.encoding,
        status: 415,
        body: {
          code: 'VALIDATION_FAILED',
          message:
            'unsupported request body encoding (encoding.unsupported): send identity-encoded JSON',
          retrySafe: false,
          traceId,
        },
      });
    }
    const get = await raw(
      `GET /v1/fenced HTTP/1.1\r\nhost: x\r\nauthorization: ${await testBearer('operator', 'probe')}\r\ncontent-encoding: gzip\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`,
    );
    expect(get.status).toBe(415);
    expect(JSON.parse(get.body)).toMatchObject({ code: 'VALIDATION_FAILED', retrySafe: false });
  });

  it('refuses a body nested deeper than 64 levels, and a non-object body, with 400', async () => {
    const headers = { 'x-fencing-token': '5' };
    const deep = await http('POST', `${base}/v1/echo`, {
      headers,
      rawBody: `{"name":${'['.repeat(3000)}${']'.repeat(3000)}}`,
    });
    expect(deep.status).toBe(400);
    expect(deep.body).toEqual({
      code: 'VALIDATION_FAILED',
      message: 'request body nested too deep',
      retrySafe: false,
      details: { fields: [{ field: 'body', message: 'must be nested at most 64 levels deep' }] },
      traceId,
    });
    for (const rawBody of ['9007199254740993', '-99999999999999999999', '[1]', '"x"', 'null']) {
      const res = await http('POST', `${base}/v1/echo`, { headers, rawBody });
      expect({ rawBody, status: res.status, body: res.body }).toEqual({
        rawBody,
        status: 400,
        body: {
          code: 'VALIDATION_FAILED',
          message: 'request body must be a JSON object',
          retrySafe: false,
          details: { fields: [{ field: 'body', message: 'must be a JSON object' }] },
          traceId,
        },
      });
    }
  });

  it('answers bytes the HTTP parser refuses with the envelope, then closes', async () => {
    for (const bad of [
      'POST /v1/echo HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
      'GET /v1/fenced HTTP/1.1\r\nhost: x\r\nx-owner-id: a\u0001b\r\n\r\n',
      'POST /v1/echo HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\ntransfer-encoding: chunked\r\n\r\n',
    ]) {
      const res = await raw(bad);
      expect({ status: res.status, body: JSON.parse(res.body) }).toEqual({
        status: 400,
        body: {
          code: 'VALIDATION_FAILED',
          message: 'malformed HTTP request',
          retrySafe: false,
          traceId,
        },
      });
    }
  });

  it('reads a body only as JSON: another type, or none, is 415; a request without a body needs no type', async () => {
    const bearer = await testBearer('operator', 'probe');
    const post = (headers: string, body: string) =>
      raw(
        `POST /v1/echo HTTP/1.1\r\nhost: x\r\nauthorization: ${bearer}\r\nx-fencing-token: 5\r\n` +
          `${headers}content-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`,
      );
    const json = '{"name":"ok"}';
    for (const type of [
      'content-type: text/plain\r\n',
      'content-type: application/jsonx\r\n',
      '',
    ]) {
      const res = await post(type, json);
      expect({ type, status: res.status, body: JSON.parse(res.body) }).toEqual({
        type,
        status: 415,
        body: {
          code: 'VALIDATION_FAILED',
          message: expect.stringMatching(/^unsupported request body type/),
          retrySafe: false,
          details: { fields: [{ field: 'Content-Type', message: 'must be application/json' }] },
          traceId,
        },
      });
    }
    expect((await post('content-type: Application/JSON; charset=utf-8\r\n', json)).status).toBe(
      201,
    );
    for (const type of ['', 'content-type: text/plain\r\n']) {
      const ping = await raw(
        `POST /v1/ping HTTP/1.1\r\nhost: x\r\nauthorization: ${bearer}\r\n${type}` +
          `content-length: 0\r\nconnection: close\r\n\r\n`,
      );
      expect({ type, status: ping.status }).toEqual({ type, status: 201 });
    }
  });

  it('refuses a header that must come once and came twice: node would have kept the first', async () => {
    const bearer = await testBearer('operator', 'probe');
    for (const [twice, field] of [
      [`authorization: ${bearer}\r\nAuthorization: Bearer x`, 'Authorization'],
      [`authorization: ${bearer}\r\nx-fencing-token: 5\r\nX-Fencing-Token: 6`, 'X-Fencing-Token'],
    ]) {
      const res = await raw(
        `GET /v1/fenced HTTP/1.1\r\nhost: x\r\n${twice}\r\nconnection: close\r\n\r\n`,
      );
      expect({ status: res.status, body: JSON.parse(res.body) }).toEqual({
        status: 400,
        body: {
          code: 'VALIDATION_FAILED',
          message: 'request validation failed',
          retrySafe: false,
          details: { fields: [{ field, message: 'header sent more than once' }] },
          traceId,
        },
      });
    }
  });

  /** Raw bytes over one connection; the answer's status and body (connection: close). */
  function raw(text: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const port = Number(new URL(base).port);
      const socket = net.connect({ port, host: '127.0.0.1' });
      let got = '';
      socket.on('data', (c: Buffer) => (got += c.toString('utf8')));
      socket.on('error', reject);
      socket.on('close', () => {
        const length = Number(/content-length: (\d+)/i.exec(got)?.[1] ?? 0);
        const at = got.indexOf('\r\n\r\n') + 4;
        resolve({ status: Number(got.slice(9, 12)), body: got.slice(at, at + length) });
      });
      socket.write(Buffer.from(text, 'latin1'));
    });
  }
});

describe("HTTP contract for an app that gates people's sessions itself (the console)", () => {
  let app: NestExpressApplication;
  let base: string;
  /** What each request's body was when the app's gate saw it. */
  const bodiesAtGate: unknown[] = [];

  beforeAll(async () => {
    app = await NestFactory.create<NestExpressApplication>(ProbeModule, {
      bodyParser: false,
      logger: false,
    });
    applyHttpContract(app, 'people: sessions the app gates itself', {
      beforeBody: (created) =>
        created.use((req: Request, _res: Response, next: NextFunction) => {
          bodiesAtGate.push(req.body);
          if (req.headers['x-session'] === 'ok') return next();
          next(new ForbiddenError('sign in first', { reason: 'session' }));
        }),
      bodyLimitBytes: 1_024,
    });
    await app.listen(0, '127.0.0.1');
    const address = app.getHttpServer().address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  afterAll(() => app.close());

  it("runs the gate before the body is read: a refused request's malformed body is never parsed", async () => {
    const res = await http('POST', `${base}/v1/echo`, {
      rawBody: '{not json',
      noAuth: true,
      noProof: true,
    });
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'FORBIDDEN', details: { reason: 'session' } });
    expect(bodiesAtGate.at(-1)).toBeUndefined();
  });

  it('asks for no bearer token and no policy once the gate lets a request in', async () => {
    const res = await http('GET', `${base}/v1/contended`, {
      headers: { 'x-session': 'ok' },
      noAuth: true,
      noProof: true,
    });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'LOCK_CONTENDED' });
  });

  it("refuses a body over the app's own limit", async () => {
    const res = await http('POST', `${base}/v1/echo`, {
      headers: { 'x-session': 'ok', 'x-fencing-token': '1' },
      rawBody: JSON.stringify({ name: 'x'.repeat(2_000) }),
      noAuth: true,
      noProof: true,
    });
    expect(res.status).toBe(413);
  });
});
