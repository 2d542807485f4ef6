import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { base64url, importJWK, SignJWT, type JWK } from 'jose';
import { DEV_ISSUER, DevIssuer } from './dev-issuer';
import { UnauthenticatedError } from './errors';
import { TOKEN_BYTES_MAX, TokenVerifier } from './verifier';

const AUDIENCE = 'lock-server';
const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dlock-identity-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function encode(part: object): string {
  return base64url.encode(JSON.stringify(part));
}

async function refusal(verifier: TokenVerifier, header: string | string[] | undefined) {
  try {
    await verifier.verify(header);
  } catch (err) {
    expect(err).toBeInstanceOf(UnauthenticatedError);
    return (err as UnauthenticatedError).message;
  }
  throw new Error('verified a token that should have been refused');
}

describe('TokenVerifier', () => {
  let issuer: DevIssuer;
  let verifier: TokenVerifier;
  let publicJwk: JWK;
  const nowSec = () => Math.floor(Date.now() / 1000);

  beforeAll(async () => {
    issuer = await DevIssuer.open(tempDir());
    verifier = new TokenVerifier({ jwks: issuer.jwksPath, issuer: DEV_ISSUER, audience: AUDIENCE });
    publicJwk = (JSON.parse(readFileSync(issuer.jwksPath, 'utf8')) as { keys: JWK[] }).keys[0];
  });

  it('accepts a token minted for this audience and names its subject', async () => {
    const token = await issuer.mint('executor-1', AUDIENCE);
    const identity = await verifier.verify(`Bearer ${token}`);
    expect(identity.subject).toBe('executor-1');
    expect(identity.expiresAtMs).toBeGreaterThan(Date.now());
  });

  const cases: [string, () => Promise<string | string[] | undefined>, string][] = [
    ['no header', async () => undefined, 'Authorization header missing'],
    [
      'two headers',
      async () => [`Bearer ${await issuer.mint('a', AUDIENCE)}`, 'Bearer x.y.z'],
      'more than one Authorization header',
    ],
    ['another scheme', async () => 'Basic dXNlcjpwYXNz', 'Authorization must be "Bearer <JWT>"'],
    ['not a JWS', async () => 'Bearer not-a-token', 'Authorization must be "Bearer <JWT>"'],
    [
      'a huge token',
      async () => `Bearer ${'a'.repeat(TOKEN_BYTES_MAX)}.${'b'.repeat(10)}.c`,
      `token longer than ${TOKEN_BYTES_MAX} bytes`,
    ],
    [
      'expired',
      async () => `Bearer ${await issuer.mint('a', AUDIENCE, { nowSec: nowSec() - 700 })}`,
      'token expired',
    ],
    [
      'wrong audience',
      async () => `Bearer ${await issuer.mint('a', 'payment-resource')}`,
      'token claim aud not accepted',
    ],
    [
      'wrong issuer',
      async () => {
        const key = JSON.parse(readFileSync(join(issuer.dir, 'issuer-keys.json'), 'utf8')) as {
          keys: JWK[];
        };
        const token = await new SignJWT({})
          .setProtectedHeader({ alg: 'ES256', kid: key.keys[0].kid })
          .setIssuer('https://elsewhere.example')
          .setSubject('a')
          .setAudience(AUDIENCE)
          .setExpirationTime('5m')
          .sign(await importJWK(key.keys[0], 'ES256'));
        return `Bearer ${token}`;
      },
      'token claim iss not accepted',
    ],
    [
      'bad signature (another key under the trusted kid)',
      async () => {
        const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
        const token = await new SignJWT({})
          .setProtectedHeader({ alg: 'ES256', kid: publicJwk.kid })
          .setIssuer(DEV_ISSUER)
          .setSubject('a')
          .setAudience(AUDIENCE)
          .setExpirationTime('5m')
          .sign(privateKey);
        return `Bearer ${token}`;
      },
      'token signature does not verify',
    ],
    [
      'a subject edited after signing',
      async () => {
        const [h, , s] = (await issuer.mint('executor-1', AUDIENCE)).split('.');
        const payload = { iss: DEV_ISSUER, sub: 'operator', aud: AUDIENCE, exp: nowSec() + 60 };
        return `Bearer ${h}.${encode(payload)}.${s}`;
      },
      'token signature does not verify',
    ],
    [
      'unknown kid',
      async () => `Bearer ${await (await DevIssuer.open(tempDir())).mint('a', AUDIENCE)}`,
      'token key id unknown',
    ],
    [
      'alg none',
      async () => {
        const payload = { iss: DEV_ISSUER, sub: 'a', aud: AUDIENCE, exp: nowSec() + 60 };
        return `Bearer ${encode({ alg: 'none', typ: 'JWT' })}.${encode(payload)}.AAAA`;
      },
      'token algorithm not accepted',
    ],
    [
      'alg none without a signature',
      async () => {
        const payload = { iss: DEV_ISSUER, sub: 'a', aud: AUDIENCE, exp: nowSec() + 60 };
        return `Bearer ${encode({ alg: 'none' })}.${encode(payload)}.`;
      },
      'Authorization must be "Bearer <JWT>"',
    ],
    [
      'HS256 keyed with the published public key',
      async () => {
        const secret = new TextEncoder().encode(JSON.stringify(publicJwk));
        const token = await new SignJWT({})
          .setProtectedHeader({ alg: 'HS256', kid: publicJwk.kid })
          .setIssuer(DEV_ISSUER)
          .setSubject('a')
          .setAudience(AUDIENCE)
          .setExpirationTime('5m')
          .sign(secret);
        return `Bearer ${token}`;
      },
      'token algorithm not accepted',
    ],
    [
      'no subject',
      async () => {
        const key = JSON.parse(readFileSync(join(issuer.dir, 'issuer-keys.json'), 'utf8')) as {
          keys: JWK[];
        };
        const token = await new SignJWT({})
          .setProtectedHeader({ alg: 'ES256', kid: key.keys[0].kid })
          .setIssuer(DEV_ISSUER)
          .setAudience(AUDIENCE)
          .setExpirationTime('5m')
          .sign(await importJWK(key.keys[0], 'ES256'));
        return `Bearer ${token}`;
      },
      'token claim sub not accepted',
    ],
  ];

  it.each(cases)('refuses %s', async (_name, header, message) => {
    expect(await refusal(verifier, await header())).toBe(message);
  });

  it('keeps verifying old tokens after a key rotation and learns the new key', async () => {
    let now = Date.now();
    const dir = tempDir();
    const rotating = await DevIssuer.open(dir);
    const v = new TokenVerifier({
      jwks: rotating.jwksPath,
      issuer: DEV_ISSUER,
      audience: AUDIENCE,
      now: () => now,
    });
    const before = await rotating.mint('w', AUDIENCE);
    await rotating.rotate();
    const after = await rotating.mint('w', AUDIENCE);
    expect((await v.verify(`Bearer ${before}`)).subject).toBe('w');
    now += 2_000; // past the unknown-kid cooldown: the file is read again
    expect((await v.verify(`Bearer ${after}`)).subject).toBe('w');
    await rotating.rotate(1); // old keys dropped from the JWKS
    now += 60_000; // past the verified-token cache and the file reload
    expect(await refusal(v, `Bearer ${before}`)).toBe('token key id unknown');
  });

  it('refuses a cached token once it expires', async () => {
    let now = Date.now();
    const v = new TokenVerifier({
      jwks: issuer.jwksPath,
      issuer: DEV_ISSUER,
      audience: AUDIENCE,
      now: () => now,
      clockToleranceSec: 0,
    });
    const token = await issuer.mint('w', AUDIENCE, { ttlSec: 10 });
    expect((await v.verify(`Bearer ${token}`)).subject).toBe('w');
    now += 11_000;
    expect(await refusal(v, `Bearer ${token}`)).toBe('token expired');
  });

  it('refuses every token until a missing JWKS file appears, then verifies', async () => {
    let now = Date.now();
    const dir = tempDir();
    const v = new TokenVerifier({
      jwks: join(dir, 'issuer', 'jwks.json'),
      issuer: DEV_ISSUER,
      audience: AUDIENCE,
      now: () => now,
    });
    const late = await DevIssuer.open(join(dir, 'issuer'));
    const token = `Bearer ${await late.mint('w', AUDIENCE)}`;
    expect(await refusal(v, token)).toBe('token key id unknown');
    now += 2_000;
    expect((await v.verify(token)).subject).toBe('w');
  });

  it('refuses to start on a file that is not a JWKS', () => {
    const path = join(tempDir(), 'jwks.json');
    writeFileSync(path, '{"not":"keys"}');
    expect(() => new TokenVerifier({ jwks: path, issuer: DEV_ISSUER, audience: 'x' })).toThrow(
      /is not a JWKS/,
    );
  });

  it('a pod-bound Kubernetes token acts as its pod', async () => {
    const key = JSON.parse(readFileSync(join(issuer.dir, 'issuer-keys.json'), 'utf8')) as {
      keys: JWK[];
    };
    const token = await new SignJWT({ 'kubernetes.io': { pod: { name: 'executor-7d9f-x2x' } } })
      .setProtectedHeader({ alg: 'ES256', kid: key.keys[0].kid })
      .setIssuer(DEV_ISSUER)
      .setSubject('system:serviceaccount:dlock:executor')
      .setAudience(AUDIENCE)
      .setExpirationTime('5m')
      .sign(await importJWK(key.keys[0], 'ES256'));
    expect((await verifier.verify(`Bearer ${token}`)).subject).toBe('executor-7d9f-x2x');
  });
});
