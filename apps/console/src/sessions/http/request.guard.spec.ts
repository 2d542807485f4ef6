import type { NextFunction, Request, Response } from 'express';
import { allowedHosts, hostAndOriginGuard, sessionIdOf } from './request.guard';

describe('allowedHosts', () => {
  it('defaults to loopback names with the port, plus a one-address CONSOLE_HOST', () => {
    expect([...allowedHosts([], '127.0.0.1', 8090)]).toEqual([
      '127.0.0.1:8090',
      'localhost:8090',
      '[::1]:8090',
    ]);
    expect([...allowedHosts([], '0.0.0.0', 8090)]).toHaveLength(3);
    expect(allowedHosts([], '10.0.0.5', 8090).has('10.0.0.5:8090')).toBe(true);
    expect(allowedHosts([], 'fd00::5', 8090).has('[fd00::5]:8090')).toBe(true);
  });

  it('is exactly CONSOLE_ALLOWED_HOSTS when that is set', () => {
    expect([...allowedHosts(['console.example.com'], '0.0.0.0', 8090)]).toEqual([
      'console.example.com',
    ]);
  });
});

/** Runs the guard on a request; undefined when it let it through, else the refusal. */
function guard(method: string, headers: Record<string, string>, path = '/api/actions/revoke') {
  const own = allowedHosts([], '127.0.0.1', 8090);
  let passed: unknown = 'not called';
  const next = ((err?: unknown) => (passed = err)) as NextFunction;
  hostAndOriginGuard(() => own)(
    { method, path, headers } as unknown as Request,
    {} as Response,
    next,
  );
  return passed as { code: string; details: { reason: string } } | undefined;
}

describe('hostAndOriginGuard', () => {
  const host = { host: '127.0.0.1:8090' };

  it("lets the console's own page through: its Host, its Origin or none", () => {
    expect(guard('GET', host)).toBeUndefined();
    expect(
      guard('POST', { host: 'LOCALHOST:8090', origin: 'http://localhost:8090' }),
    ).toBeUndefined();
    expect(guard('POST', { ...host, 'sec-fetch-site': 'same-origin' })).toBeUndefined();
    // curl and other tools send neither Origin nor Sec-Fetch-Site.
    expect(guard('POST', host)).toBeUndefined();
  });

  it.each([
    ['another name for 127.0.0.1 (DNS rebinding)', 'GET', { host: 'evil.example:8090' }, 'host'],
    ['the right name on another port', 'GET', { host: '127.0.0.1:8091' }, 'host'],
    ['no Host at all', 'GET', {}, 'host'],
    ['a foreign Origin', 'POST', { ...host, origin: 'http://evil.example' }, 'origin'],
    ['a foreign Origin on a read', 'GET', { ...host, origin: 'https://evil.example' }, 'origin'],
    ['Origin null (a sandboxed page)', 'POST', { ...host, origin: 'null' }, 'origin'],
    ['an Origin with a path', 'POST', { ...host, origin: 'http://127.0.0.1:8090/x' }, 'origin'],
    [
      'a cross-site POST without Origin',
      'POST',
      { ...host, 'sec-fetch-site': 'cross-site' },
      'origin',
    ],
    [
      'a same-site POST without Origin',
      'DELETE',
      { ...host, 'sec-fetch-site': 'same-site' },
      'origin',
    ],
  ])('refuses %s: 403 FORBIDDEN', (_what, method, headers, reason) => {
    expect(guard(method, headers as Record<string, string>)).toMatchObject({
      code: 'FORBIDDEN',
      details: { reason },
    });
  });

  it('answers probes and scrapers whatever the Host (a kubelet probes the pod IP)', () => {
    for (const path of ['/health/live', '/health/ready', '/metrics'])
      expect(guard('GET', { host: '10.1.2.3:8090' }, path)).toBeUndefined();
    expect(guard('GET', { host: '10.1.2.3:8090' }, '/')).toMatchObject({ code: 'FORBIDDEN' });
  });
});

describe('sessionIdOf', () => {
  it('reads only the session cookie', () => {
    const req = (cookie?: string) => ({ headers: cookie ? { cookie } : {} }) as Request;
    expect(sessionIdOf(req('a=1; dlock_console_session=abc-_1; b=2'))).toBe('abc-_1');
    expect(sessionIdOf(req('a=1'))).toBeUndefined();
    expect(sessionIdOf(req())).toBeUndefined();
  });
});
