import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEV_ISSUER, DevIssuer } from './dev-issuer';
import { DevTokenFiles, fileTokenProvider } from './token-files';
import { TokenVerifier } from './verifier';

describe('token files', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'dlock-tokens-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes a verifiable token per audience for the identity', async () => {
    const issuer = await DevIssuer.open(join(dir, 'issuer'));
    const files = new DevTokenFiles(issuer, 'reconciler', ['lock-server', 'rail-proxy'], dir);
    await files.write();
    for (const audience of ['lock-server', 'rail-proxy']) {
      const v = new TokenVerifier({ jwks: issuer.jwksPath, issuer: DEV_ISSUER, audience });
      const token = fileTokenProvider(dir, audience)();
      expect(await v.verify(`Bearer ${token as string}`)).toMatchObject({ subject: 'reconciler' });
    }
  });

  it('re-reads the file only after the reload interval (a rotated token is picked up)', () => {
    let now = 0;
    writeFileSync(join(dir, 'lock-server'), 'first\n');
    const provide = fileTokenProvider(dir, 'lock-server', { reloadMs: 1_000, now: () => now });
    expect(provide()).toBe('first');
    writeFileSync(join(dir, 'lock-server'), 'second');
    now = 999;
    expect(provide()).toBe('first');
    now = 1_000;
    expect(provide()).toBe('second');
  });

  it('refuses an empty token file and a path-like audience', () => {
    writeFileSync(join(dir, 'lock-server'), '  \n');
    expect(() => fileTokenProvider(dir, 'lock-server')()).toThrow(/is empty/);
    expect(() => fileTokenProvider(dir, '../etc')).toThrow(/bad audience/);
  });
});
