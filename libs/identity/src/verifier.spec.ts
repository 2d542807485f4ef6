import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { base64url, decodeJwt, importJWK, SignJWT, type JWK } from 'jose';
import { DEV_ISSUER, DEV_TOKEN_TTL_SEC, DevIssuer } from './dev-issuer';
import { UnauthenticatedError } from './errors';
import { register } from 'prom-client';
import {
  TOKEN_BYTES_MAX,
  TOKEN_LIFETIME_MAX_MS_DEFAULT,
  TokenVerifier,
  VERIFIED_CACHE_MAX,
} from './verifier';

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

  // docs/security.md, "Identities": one spelling per subject, before any policy match.
  it.each([
    ['a zero-width space', 'operator-alice\u200b'],
    ['a full-width letter', '\uff4fperator-alice'],
    ['a Cyrillic look-alike', 'operat\u043er-alice'],
    ['a Kelvin sign, which NFC would turn into K', 'operator-\u212aate'],
    ['a space', 'operator alice'],
    ['a control character', 'operator-alice\n'],
    ['a leading separator', '-operator'],
  ])('refuses a subject with %s before any policy sees it', async (_what, subject) => {
    const token = await issuer.mint(subject, AUDIENCE);
    expect(await refusal(verifier, `Bearer ${token}`)).toBe(
      'token subject has characters outside the plain set',
    );
  });

  it('accepts the plain subjects issuers use', async () => {
    for (const subject of [
      'operator-alice',
      'system:serviceaccount:dlock:operator-bob',
      'auth0|5f1c.x_y',
      'alice@example.com',
      '00uAbC123~x/y+z=',
    ]) {
      const token = await issuer.mint(subject, AUDIENCE);
      expect((await verifier.verify(`Bearer ${token}`)).subject).toBe(subject);
    }
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
          .setIssuedAt()
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
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(await importJWK(key.keys[0], 'ES256'));
        return `Bearer ${token}`;
      },
      'token claim sub missing',
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

  // docs/security.md, "Limits": a burst of one token costs one signature check.
  describe('signature checks', () => {
    const checks = async () =>
      (await register.getSingleMetric('auth_token_verifications_total')?.get())?.values[0]?.value ??
      0;

    it('checks a token once however many requests bring it at the same time', async () => {
      const v = new TokenVerifier({
        jwks: issuer.jwksPath,
        issuer: DEV_ISSUER,
        audience: AUDIENCE,
      });
      const header = `Bearer ${await issuer.mint('burst', AUDIENCE)}`;
      const before = await checks();
      const identities = await Promise.all(Array.from({ length: 50 }, () => v.verify(header)));
      expect(identities.map((i) => i.subject)).toEqual(Array(50).fill('burst'));
      expect((await checks()) - before).toBe(1);
      // A refused token is not remembered: it is refused again, by a new check.
      const forged = `${header.slice(0, header.lastIndexOf('.') + 1)}AAAA`;
      const refusals = await Promise.all(Array.from({ length: 5 }, () => refusal(v, forged)));
      expect(refusals).toEqual(Array(5).fill('token signature does not verify'));
      expect(await refusal(v, forged)).toBe('token signature does not verify');
      expect((await checks()) - before).toBe(3);
    });

    it('forgets the least recently used token when full, not every token', async () => {
      const v = new TokenVerifier({
        jwks: issuer.jwksPath,
        issuer: DEV_ISSUER,
        audience: AUDIENCE,
      });
      const kept = `Bearer ${await issuer.mint('kept', AUDIENCE)}`;
      await v.verify(kept);
      const others = await Promise.all(
        Array.from({ length: VERIFIED_CACHE_MAX }, (_, i) => issuer.mint(`w-${i}`, AUDIENCE)),
      );
      for (const [i, token] of others.entries()) {
        await v.verify(`Bearer ${token}`);
        if (i % 1_000 === 0) await v.verify(kept); // used now and then: stays
      }
      const before = await checks();
      await v.verify(kept);
      expect((await checks()) - before).toBe(0);
      await v.verify(`Bearer ${others[0]}`); // the oldest unused one was forgotten
      expect((await checks()) - before).toBe(1);
    });

    it('reads the subject a token claims without checking it, for refusing early only', async () => {
      const header = `Bearer ${await issuer.mint('claimed', AUDIENCE)}`;
      const forged = `${header.slice(0, header.lastIndexOf('.') + 1)}AAAA`;
      expect(verifier.claimedSubject(forged)).toBe('claimed');
      expect(verifier.claimedSubject('Bearer not-a-jwt')).toBeUndefined();
      expect(verifier.claimedSubject(undefined)).toBeUndefined();
      const noSub = `Bearer ${encode({ alg: 'ES256' })}.${encode({ iss: DEV_ISSUER })}.AAAA`;
      expect(verifier.claimedSubject(noSub)).toBeUndefined();
    });
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

  /** A token signed by the trusted issuer with exactly these claims (iss added). */
  async function signed(claims: Record<string, unknown>): Promise<string> {
    const key = JSON.parse(readFileSync(join(issuer.dir, 'issuer-keys.json'), 'utf8')) as {
      keys: JWK[];
    };
    const token = await new SignJWT({ iss: DEV_ISSUER, ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: key.keys[0].kid })
      .sign(await importJWK(key.keys[0], 'ES256'));
    return `Bearer ${token}`;
  }
  const claims = (lifetimeSec: number, extra: Record<string, unknown> = {}) => ({
    sub: 'w',
    aud: AUDIENCE,
    iat: nowSec(),
    exp: nowSec() + lifetimeSec,
    ...extra,
  });

  describe('lifetime and issue time', () => {
    it('accepts a token of exactly the cap (a projected token of one hour), refuses a second more', async () => {
      expect((await verifier.verify(await signed(claims(3600)))).subject).toBe('w');
      expect(await refusal(verifier, await signed(claims(3601)))).toBe(
        'token lifetime longer than 3600 s',
      );
    });

    it('applies a configured cap', async () => {
      const capped = new TokenVerifier({
        jwks: issuer.jwksPath,
        issuer: DEV_ISSUER,
        audience: AUDIENCE,
        tokenLifetimeMaxMs: 600_000,
      });
      expect((await capped.verify(await signed(claims(600)))).subject).toBe('w');
      expect(await refusal(capped, await signed(claims(601)))).toBe(
        'token lifetime longer than 600 s',
      );
      // A token refused for its lifetime stays refused: nothing was cached.
      const long = await signed(claims(3600));
      expect(await refusal(capped, long)).toBe('token lifetime longer than 600 s');
      expect(await refusal(capped, long)).toBe('token lifetime longer than 600 s');
    });

    it('the development issuer mints iat and a lifetime within the cap', async () => {
      const token = await issuer.mint('w', AUDIENCE);
      const payload = decodeJwt(token);
      expect(payload.exp! - payload.iat!).toBe(DEV_TOKEN_TTL_SEC);
      expect(DEV_TOKEN_TTL_SEC * 1000).toBeLessThanOrEqual(TOKEN_LIFETIME_MAX_MS_DEFAULT);
      expect((await verifier.verify(`Bearer ${token}`)).subject).toBe('w');
      expect(
        (await verifier.verify(`Bearer ${await issuer.mint('w', AUDIENCE, { ttlSec: 3600 })}`))
          .subject,
      ).toBe('w');
    });

    it('refuses a token without iat', async () => {
      const { iat: _iat, ...noIat } = claims(60);
      expect(await refusal(verifier, await signed(noIat))).toBe('token claim iat missing');
    });

    it('refuses a token issued in the future beyond the clock tolerance, not within it', async () => {
      const ahead = (sec: number) => signed(claims(600, { iat: nowSec() + sec }));
      expect(await refusal(verifier, await ahead(60))).toBe('token issued in the future');
      expect((await verifier.verify(await ahead(3))).subject).toBe('w');
    });
  });

  describe('audience: a token is addressed to exactly one service', () => {
    it('accepts an aud array of one element naming this service', async () => {
      expect((await verifier.verify(await signed(claims(60, { aud: [AUDIENCE] })))).subject).toBe(
        'w',
      );
    });

    it('refuses a token naming several audiences, this one among them', async () => {
      const token = await signed(claims(60, { aud: [AUDIENCE, 'payment-resource'] }));
      expect(await refusal(verifier, token)).toBe('token names more than one audience');
    });

    it('refuses a token naming other services only', async () => {
      const token = await signed(claims(60, { aud: ['payment-resource', 'rail-proxy'] }));
      expect(await refusal(verifier, token)).toBe('token claim aud not accepted');
    });
  });

  describe('Kubernetes service-account tokens', () => {
    const sa = (namespace: string, name: string, pod?: string, k8s: object = {}) =>
      claims(600, {
        aud: [AUDIENCE],
        sub: `system:serviceaccount:${namespace}:${name}`,
        'kubernetes.io': {
          namespace,
          serviceaccount: { name, uid: '5b1c' },
          ...(pod === undefined ? {} : { pod: { name: pod, uid: '9d2e' } }),
          ...k8s,
        },
      });
    let cluster: TokenVerifier;
    beforeAll(() => {
      cluster = new TokenVerifier({
        jwks: issuer.jwksPath,
        issuer: DEV_ISSUER,
        audience: AUDIENCE,
        kubernetes: { namespace: 'dlock', podServiceAccounts: ['executor', 'reconciler'] },
      });
    });

    it('a pod of a listed service account in the namespace is its pod name', async () => {
      const token = await signed(sa('dlock', 'executor', 'executor-7d9f-x2x'));
      expect((await cluster.verify(token)).subject).toBe('executor-7d9f-x2x');
    });

    it('a pod of the same name in another namespace is refused', async () => {
      const token = await signed(sa('other', 'executor', 'executor-2'));
      expect(await refusal(cluster, token)).toBe(
        'service-account token from a namespace other than dlock',
      );
    });

    it('a service account not listed is its full sub, whatever its pod is called', async () => {
      const person = await signed(sa('dlock', 'operator-alice'));
      expect((await cluster.verify(person)).subject).toBe(
        'system:serviceaccount:dlock:operator-alice',
      );
      const posing = await signed(sa('dlock', 'feed', 'executor-2'));
      expect((await cluster.verify(posing)).subject).toBe('system:serviceaccount:dlock:feed');
    });

    it('a listed service account without a pod is refused (it is known only by its pods)', async () => {
      expect(await refusal(cluster, await signed(sa('dlock', 'executor')))).toBe(
        'token of service account executor is not bound to a pod',
      );
    });

    it.each<[string, Record<string, unknown>]>([
      ['namespace', sa('dlock', 'executor', 'executor-2', { namespace: 'other' })],
      [
        'service account',
        sa('dlock', 'executor', 'executor-2', { serviceaccount: { name: 'reconciler' } }),
      ],
      ['shape', { ...sa('dlock', 'executor', 'executor-2'), 'kubernetes.io': 'dlock' }],
    ])('a kubernetes.io claim whose %s contradicts sub is refused', async (_what, c) => {
      expect(await refusal(cluster, await signed(c))).toBe(
        'token kubernetes.io claim does not match its subject',
      );
    });

    it('a pod claim on a token whose sub is no service account is refused, configured or not', async () => {
      const token = await signed(
        claims(600, { sub: 'executor-2', 'kubernetes.io': { pod: { name: 'executor-2' } } }),
      );
      const message = 'Kubernetes token subject is not system:serviceaccount:<namespace>:<name>';
      expect(await refusal(cluster, token)).toBe(message);
      expect(await refusal(verifier, token)).toBe(message);
      const malformed = await signed(claims(600, { sub: 'system:serviceaccount:dlock' }));
      expect(await refusal(verifier, malformed)).toBe(message);
    });

    it('unconfigured: every service-account token is its full sub, in any namespace', async () => {
      for (const ns of ['dlock', 'other']) {
        const token = await signed(sa(ns, 'executor', 'executor-2'));
        expect((await verifier.verify(token)).subject).toBe(`system:serviceaccount:${ns}:executor`);
      }
    });

    it('refuses pod service accounts without their namespace', () => {
      expect(
        () =>
          new TokenVerifier({
            jwks: issuer.jwksPath,
            issuer: DEV_ISSUER,
            audience: AUDIENCE,
            kubernetes: { podServiceAccounts: ['executor'] },
          }),
      ).toThrow('podServiceAccounts needs the namespace they belong to');
    });
  });
});
