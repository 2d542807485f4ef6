import { http } from '@dlock/testing';
import { BACKENDS } from '../support/backends';
import type { RunningLockServer } from '../support/in-process';
import { LockApi, TRACE_ID } from '../support/lock-client';

/** Non-canonical or overflowing tokens: INVALID_TOKEN, never coerced (docs/contract.md). */
const BAD_HEADER_TOKENS = ['0', '-1', '01', '1e3', '0x10', '9223372036854775808', '', '1.0', '+5'];
/** In a JSON body surrounding whitespace is not stripped by HTTP, so ' 5' is checked there. */
const BAD_BODY_TOKENS = [...BAD_HEADER_TOKENS, ' 5', '5 ', 0, -1, 1.5, true];

describe.each(BACKENDS)('bad input changes nothing and is never a 500 [$name]', (backend) => {
  let server: RunningLockServer;
  let api: LockApi;
  let session: string;
  let token: string;
  const key = 'bad:held';

  beforeAll(async () => {
    server = await backend.start();
    api = new LockApi(server.url);
    session = await api.session('owner', 30_000);
    const grant = await api.acquire(key, session, 'owner', { ttlMillis: 30_000 });
    token = grant.body.fencingToken;
  });
  // Keep the fixture grant alive however slow the run is (nothing here may change it).
  beforeEach(async () => {
    expect((await api.heartbeat(session)).status).toBe(200);
    expect((await api.renew(key, session, token)).status).toBe(200);
  });
  afterAll(() => server.stop());

  async function expectUnchanged(): Promise<void> {
    const info = await api.inspect(key);
    expect(info.body).toMatchObject({ held: true, fencingToken: token, ownerId: 'owner' });
  }

  const invalidToken = {
    code: 'INVALID_TOKEN',
    message: expect.any(String),
    retrySafe: false,
    details: { field: 'X-Fencing-Token' },
    traceId: TRACE_ID,
  };

  it.each(BAD_HEADER_TOKENS)(
    'L5 and L6 reject X-Fencing-Token %p with 400 INVALID_TOKEN',
    async (bad) => {
      expect(await api.renew(key, session, bad)).toMatchObject({ status: 400, body: invalidToken });
      expect(await api.release(key, session, bad)).toMatchObject({
        status: 400,
        body: invalidToken,
      });
      await expectUnchanged();
    },
  );

  it('L5 and L6 reject a missing X-Fencing-Token with 400 INVALID_TOKEN', async () => {
    const renew = await http('POST', `${server.url}/v1/locks/${key}/renew`, {
      headers: { 'x-owner-id': 'owner' },
      body: { sessionId: session },
    });
    const release = await http('DELETE', `${server.url}/v1/locks/${key}`, {
      headers: { 'x-owner-id': 'owner' },
    });
    expect(renew).toMatchObject({ status: 400, body: invalidToken });
    expect(release).toMatchObject({ status: 400, body: invalidToken });
    await expectUnchanged();
  });

  it.each(BAD_BODY_TOKENS)(
    'L8 rejects expectedToken %p with 400 VALIDATION_FAILED',
    async (bad) => {
      const res = await api.revoke(key, {
        operator: 'ops',
        reason: 'bad token probe',
        expectedToken: bad,
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        code: 'VALIDATION_FAILED',
        message: expect.any(String),
        retrySafe: false,
        details: { fields: [expect.objectContaining({ field: 'expectedToken' })] },
        traceId: TRACE_ID,
      });
      await expectUnchanged();
    },
  );

  it.each([
    ['129 characters', 'k'.repeat(129)],
    ['a space', 'a%20b'],
    ['a slash', 'a%2Fb'],
    ['a non-ASCII letter', '%C3%A4'],
    ['an asterisk', 'a*b'],
  ])('rejects a key of %s with 400 VALIDATION_FAILED on L4, L7 and L8', async (_n, badKey) => {
    const expected = {
      code: 'VALIDATION_FAILED',
      message: expect.any(String),
      retrySafe: false,
      details: { fields: [expect.objectContaining({ field: 'key' })] },
      traceId: TRACE_ID,
    };
    for (const res of [
      await api.acquire(badKey, session, 'owner'),
      await api.inspect(badKey),
      await api.revoke(badKey, { operator: 'ops', reason: 'long enough' }),
      await api.renew(badKey, session, token),
    ]) {
      expect(res.status).toBe(400);
      expect(res.body).toEqual(expected);
    }
    await expectUnchanged();
  });

  it('accepts a key of exactly 128 characters of the full charset', async () => {
    const longKey = `aZ09:._-${'x'.repeat(120)}`;
    const res = await api.acquire(longKey, session, 'owner');
    expect(res.status).toBe(200);
    expect(res.body.key).toBe(longKey);
  });

  it.each([
    ['ttl 999', { ttlMillis: 999 }],
    ['ttl 60001', { ttlMillis: 60001 }],
    ['ttl as text', { ttlMillis: '2000' }],
    ['waitMillis -1', { waitMillis: -1 }],
    ['waitMillis 30001', { waitMillis: 30001 }],
    ['sessionId not a uuid', { sessionId: 'abc' }],
    ['an unknown field', { colour: 'red' }],
  ])('L4 rejects %s with 400 VALIDATION_FAILED', async (_n, extra) => {
    const res = await http('POST', `${server.url}/v1/locks/bad:ttl/acquire`, {
      headers: { 'x-owner-id': 'owner' },
      body: { sessionId: session, ...extra },
    });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.details.fields.length).toBeGreaterThan(0);
    expect((await api.inspect('bad:ttl')).status).toBe(404);
  });

  it('L4 rejects an X-Owner-Id over 64 characters, and a missing one', async () => {
    for (const headers of [{ 'x-owner-id': 'o'.repeat(65) }, {} as Record<string, string>]) {
      const res = await http('POST', `${server.url}/v1/locks/bad:owner/acquire`, {
        headers,
        body: { sessionId: session },
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        code: 'VALIDATION_FAILED',
        message: expect.any(String),
        retrySafe: false,
        details: { fields: [expect.objectContaining({ field: 'X-Owner-Id' })] },
        traceId: TRACE_ID,
      });
    }
    expect((await api.inspect('bad:owner')).status).toBe(404);
  });

  it('L5 rejects a ttl out of range', async () => {
    const res = await api.renew(key, session, token, { ttlMillis: 60_001 });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    await expectUnchanged();
  });

  it('rejects malformed JSON with 400 and an oversized body with 413', async () => {
    const malformed = await http('POST', `${server.url}/v1/locks/bad:json/acquire`, {
      headers: { 'x-owner-id': 'owner' },
      rawBody: '{"sessionId": ',
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({
      code: 'VALIDATION_FAILED',
      message: expect.any(String),
      retrySafe: false,
      details: { fields: [expect.objectContaining({ field: 'body' })] },
      traceId: TRACE_ID,
    });
    const huge = await http('POST', `${server.url}/v1/locks/bad:json/acquire`, {
      headers: { 'x-owner-id': 'owner' },
      body: { sessionId: session, pad: 'x'.repeat(200_000) },
    });
    expect(huge.status).toBe(413);
    expect(huge.body).toEqual({
      code: 'VALIDATION_FAILED',
      message: expect.any(String),
      retrySafe: false,
      traceId: TRACE_ID,
    });
    const array = await http('POST', `${server.url}/v1/locks/bad:json/acquire`, {
      headers: { 'x-owner-id': 'owner' },
      rawBody: '[1,2]',
    });
    expect(array.status).toBe(400);
    expect((await api.inspect('bad:json')).status).toBe(404);
  });

  it('answers an unknown route and a wrong method with the 404 envelope', async () => {
    for (const res of [
      await http('GET', `${server.url}/v1/nope`),
      await http('PUT', `${server.url}/v1/locks/${key}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({
        code: 'NOT_FOUND',
        message: expect.any(String),
        retrySafe: false,
        traceId: TRACE_ID,
      });
    }
    await expectUnchanged();
  });
});
