import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ProofRejectedError } from '@dlock/lock-api';
import { DevIssuer } from './dev-issuer';
import { ProofVerifier, VERIFIED_PROOF_CACHE_MS } from './proof-verifier';
import {
  addSigningKey,
  describeSigningKeys,
  ensureSigningKeys,
  KEY_RING_RELOAD_MS,
  KeyRingError,
  promoteSigningKey,
  publicJwksPath,
  retireSigningKey,
  SigningKeyRing,
} from './signing-keys';

/**
 * Signed grants and instructions (docs/security.md, "Signed grants"): real
 * Ed25519 keys in real files, the rotation a running system goes through.
 */
const TYPE = 'dlock-grant+jws';
let dir: string;
let clock: number;
const now = () => clock;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'dlock-signing-'));
  clock = 1_000_000;
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function verifier(jwks: string, type = TYPE): ProofVerifier {
  return new ProofVerifier({
    jwks,
    type,
    kind: 'grant',
    name: 'grant proof',
    now,
    unknownKidCooldownMs: 0,
  });
}

async function refusal(v: ProofVerifier, proof: unknown): Promise<string> {
  const err = await v.verify(proof as string).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProofRejectedError);
  return (err as ProofRejectedError).reason;
}

describe('a signing ring and its verifiers', () => {
  it('signs deterministically and verifies offline from the published JWKS', async () => {
    const { keys, jwks } = ensureSigningKeys(join(dir, 'grant-keys.json'));
    expect(jwks).toBe(publicJwksPath(keys));
    const ring = SigningKeyRing.open(keys, now);
    const claims = { key: 'payout:a', tok: '9007199254740993', sub: 'w', sid: 's', iat: 1 };
    const proof = ring.sign(TYPE, claims);
    // The same claims, the same proof: a renew hands back exactly what the acquire did.
    expect(ring.sign(TYPE, claims)).toBe(proof);
    const v = verifier(jwks);
    await v.start();
    await expect(v.verify(proof)).resolves.toEqual(claims);
  });

  it("the signer's own proofs are remembered for a while, then verified again", async () => {
    const { keys } = ensureSigningKeys(join(dir, 'grant-keys.json'));
    const ring = SigningKeyRing.open(keys, now);
    const claims = { key: 'payout:a', tok: '1', sub: 'w', sid: 's', iat: 1 };
    const proof = ring.sign(TYPE, claims);
    // No keys loaded: only the memory can accept the proof, then only a real check.
    const v = new ProofVerifier({
      jwks: () => ({ keys: [] }),
      type: TYPE,
      kind: 'grant',
      name: 'grant proof',
      now,
    });
    v.remember(proof, claims);
    await expect(v.verify(proof)).resolves.toEqual(claims);
    clock += VERIFIED_PROOF_CACHE_MS;
    expect(await refusal(v, proof)).toBe('unknown-key');
  });

  it('holds only the proofs of the last minute, however many it has seen', () => {
    const v = new ProofVerifier({
      jwks: () => ({ keys: [] }),
      type: TYPE,
      kind: 'grant',
      name: 'grant proof',
      now,
    });
    for (let i = 0; i < 3_000; i++) {
      v.remember(`proof-${i}`, { i });
      clock += 100; // 10 proofs a second: a minute is 600 of them
    }
    expect(v.remembered).toBe(VERIFIED_PROOF_CACHE_MS / 100);
    // A renew's proof is remembered again from now, and the older ones still leave first.
    v.remember('proof-2500', { i: 2500 });
    clock += VERIFIED_PROOF_CACHE_MS - 50;
    v.remember('late', {});
    expect(v.remembered).toBe(2);
  });

  it('a guard that meets each proof once remembers none', async () => {
    const ring = SigningKeyRing.open(ensureSigningKeys(join(dir, 'k.json')).keys, now);
    const claims = { key: 'payout:a', tok: '1', sub: 'w', sid: 's', iat: 1 };
    const proof = ring.sign(TYPE, claims);
    const v = new ProofVerifier({
      jwks: () => ({ keys: [] }),
      type: TYPE,
      kind: 'grant',
      name: 'grant proof',
      now,
      rememberMs: 0,
    });
    v.remember(proof, claims);
    expect(v.remembered).toBe(0);
    expect(await refusal(v, proof)).toBe('unknown-key');
  });

  it('refuses what it cannot trust, and says why', async () => {
    const { keys, jwks } = ensureSigningKeys(join(dir, 'grant-keys.json'));
    const ring = SigningKeyRing.open(keys, now);
    const v = verifier(jwks);
    await v.start();
    const proof = ring.sign(TYPE, { a: 1 });
    const [h, p, s] = proof.split('.');
    const other = SigningKeyRing.open(ensureSigningKeys(join(dir, 'other.json')).keys, now);
    expect(await refusal(v, undefined)).toBe('missing');
    expect(await refusal(v, '')).toBe('missing');
    expect(await refusal(v, [proof, proof])).toBe('malformed');
    expect(await refusal(v, 'not a jws')).toBe('malformed');
    expect(await refusal(v, `${h}.${p}.${s}x`.repeat(200))).toBe('malformed');
    expect(await refusal(v, ring.sign('dlock-payout-instruction+jws', { a: 1 }))).toBe('malformed');
    expect(await refusal(v, other.sign(TYPE, { a: 1 }))).toBe('unknown-key');
    const tampered = Buffer.from(JSON.stringify({ a: 2 })).toString('base64url');
    expect(await refusal(v, `${h}.${tampered}.${s}`)).toBe('signature');
    const none = Buffer.from(JSON.stringify({ alg: 'none', typ: TYPE, kid: 'x' })).toString(
      'base64url',
    );
    expect(await refusal(v, `${none}.${p}.${s}`)).toBe('malformed');
  });

  it('rotates with no refusal: add, let guards read it, promote, retire', async () => {
    const { keys, jwks } = ensureSigningKeys(join(dir, 'grant-keys.json'));
    const ring = SigningKeyRing.open(keys, now);
    const v = verifier(jwks);
    await v.start();
    const old = ring.sign(TYPE, { n: 1 });
    const firstKid = ring.kid;

    const next = addSigningKey(keys);
    clock += KEY_RING_RELOAD_MS;
    // Published but not signing yet: every replica still signs with the first key.
    expect(ring.kid).toBe(firstKid);
    expect(ring.publicJwks.keys.map((k) => (k as { kid: string }).kid)).toEqual([firstKid, next]);

    promoteSigningKey(keys, next);
    clock += KEY_RING_RELOAD_MS;
    expect(ring.kid).toBe(next);
    const fresh = ring.sign(TYPE, { n: 2 });
    // The guard meets a key id it has not loaded: it reads the JWKS again, once.
    await expect(v.verify(fresh)).resolves.toEqual({ n: 2 });
    await expect(v.verify(old)).resolves.toEqual({ n: 1 });

    expect(() => retireSigningKey(keys, next)).toThrow(KeyRingError);
    retireSigningKey(keys, firstKid);
    const late = verifier(jwks);
    await late.start();
    expect(await refusal(late, old)).toBe('unknown-key');
    await expect(late.verify(fresh)).resolves.toEqual({ n: 2 });
  });

  it('tells its listener the signing key at open and after a promotion (the services log it)', () => {
    const { keys } = ensureSigningKeys(join(dir, 'grant-keys.json'));
    const told: [string, number][] = [];
    const ring = SigningKeyRing.open(keys, now, (kid, published) => told.push([kid, published]));
    const first = ring.kid;
    expect(told).toEqual([[first, 1]]);
    const next = addSigningKey(keys);
    clock += KEY_RING_RELOAD_MS;
    ring.sign(TYPE, {});
    expect(told).toEqual([[first, 1]]); // published only: the same key signs
    promoteSigningKey(keys, next);
    clock += KEY_RING_RELOAD_MS;
    ring.sign(TYPE, {});
    expect(told).toEqual([
      [first, 1],
      [next, 2],
    ]);
  });

  it('keeps the JWKS mode through a rotation and records when each key came and went', () => {
    const { keys, jwks } = ensureSigningKeys(join(dir, 'grant-keys.json'));
    chmodSync(jwks, 0o600); // as npm start leaves everything under .dlock/
    const first = SigningKeyRing.open(keys).kid;
    const next = addSigningKey(keys);
    expect([statSync(jwks).mode & 0o777, statSync(keys).mode & 0o777]).toEqual([0o600, 0o600]);
    promoteSigningKey(keys, next);
    retireSigningKey(keys, first);
    expect(statSync(jwks).mode & 0o777).toBe(0o600);
    const iso = expect.stringMatching(/^\d{4}-\d\d-\d\dT/);
    expect(describeSigningKeys(keys)).toEqual({
      keys: [{ kid: next, signs: true, createdAt: iso }],
      retired: [{ kid: first, createdAt: iso, retiredAt: iso }],
    });
    expect(() => retireSigningKey(keys, 'no-such-kid')).toThrow(/no key no-such-kid/);
    // A fresh ring's public file is world-readable as before (compose mounts it into other containers).
    expect(statSync(ensureSigningKeys(join(dir, 'other.json')).jwks).mode & 0o777).toBe(0o644);
  });

  it("rotates the development issuer's key: another process's issuer signs with it next", async () => {
    const running = await DevIssuer.open(join(dir, 'issuer'));
    chmodSync(running.jwksPath, 0o600);
    const before = running.kid;
    const rotated = await (await DevIssuer.open(join(dir, 'issuer'))).rotate();
    expect(rotated).not.toBe(before);
    expect(statSync(running.jwksPath).mode & 0o777).toBe(0o600);
    const token = await running.mint('operator', 'console');
    const header = JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString());
    expect(header.kid).toBe(rotated);
    expect(running.describe().keys.map((k) => [k.kid, k.signs])).toEqual([
      [rotated, true],
      [before, false],
    ]);
    const third = await running.rotate();
    expect(running.describe()).toMatchObject({
      keys: [{ kid: third }, { kid: rotated }],
      retired: [{ kid: before }],
    });
  });

  it('a JWKS file not written yet is an empty key set; a broken one stops the boot', async () => {
    const missing = verifier(join(dir, 'not-yet.jwks.json'));
    await missing.start();
    const ring = SigningKeyRing.open(ensureSigningKeys(join(dir, 'k.json')).keys, now);
    expect(await refusal(missing, ring.sign(TYPE, {}))).toBe('unknown-key');
    const broken = join(dir, 'broken.jwks.json');
    writeFileSync(broken, '{"nope":1}');
    await expect(verifier(broken).start()).rejects.toThrow(/not a JWKS/);
  });

  it('a ring that is not one is a KeyRingError at boot', () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ keys: [] }));
    expect(() => SigningKeyRing.open(bad)).toThrow(KeyRingError);
    writeFileSync(
      bad,
      JSON.stringify({ keys: [{ kid: 'k', kty: 'OKP', crv: 'Ed25519', x: 'x' }] }),
    );
    expect(() => SigningKeyRing.open(bad)).toThrow(/private part/);
    expect(() => SigningKeyRing.open(join(dir, 'none.json'))).toThrow(/cannot read/);
  });
});
