import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
// jose-free, so that fileTokenProvider (./token-files) loads no ESM-only package.
import { DEV_TOKEN_TTL_SEC, writeAtomically } from './files';

/** The `iss` of every development token; the services are told to expect it. */
export const DEV_ISSUER = 'https://dlock.dev-issuer.local';
export const DEV_TOKEN_TTL_MAX_SEC = 3_600;
const ALG = 'ES256';
type SigningKey = Awaited<ReturnType<typeof importJWK>>;

interface KeyFile {
  /** Newest first; the first signs, every one is published (old tokens keep verifying). */
  keys: JWK[];
}

/**
 * The local stand-in for the cluster's token issuer (docs/security.md):
 * ES256 key pairs kept under a directory (`.dlock/identity` for `npm start`,
 * a temp dir in tests), their public halves published as a JWKS file the
 * services verify against, and tokens minted per service identity.
 */
export class DevIssuer {
  private constructor(
    readonly dir: string,
    private signing: { kid: string; key: SigningKey },
  ) {}

  get jwksPath(): string {
    return jwksPath(this.dir);
  }

  /** Opens the issuer kept in `dir`, generating its first key pair if there is none. */
  static async open(dir: string): Promise<DevIssuer> {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!existsSync(keyPath(dir))) await addKey(dir, { keys: [] });
    return new DevIssuer(dir, await signingKey(readKeys(dir)));
  }

  /**
   * A new signing key; the old public keys stay in the JWKS so tokens already
   * minted verify until they expire (docs/security.md, key rotation).
   */
  async rotate(keep = 2): Promise<void> {
    const file = readKeys(this.dir);
    file.keys = file.keys.slice(0, Math.max(1, keep - 1));
    await addKey(this.dir, file);
    this.signing = await signingKey(readKeys(this.dir));
  }

  /** A token for `subject` (the service identity) addressed to `audience`. */
  async mint(
    subject: string,
    audience: string,
    opts: { ttlSec?: number; nowSec?: number } = {},
  ): Promise<string> {
    const ttlSec = opts.ttlSec ?? DEV_TOKEN_TTL_SEC;
    if (!(ttlSec >= 1 && ttlSec <= DEV_TOKEN_TTL_MAX_SEC))
      throw new RangeError(`ttlSec must be 1..${DEV_TOKEN_TTL_MAX_SEC}`);
    const now = opts.nowSec ?? Math.floor(Date.now() / 1000);
    return new SignJWT({})
      .setProtectedHeader({ alg: ALG, kid: this.signing.kid, typ: 'JWT' })
      .setIssuer(DEV_ISSUER)
      .setSubject(subject)
      .setAudience(audience)
      .setIssuedAt(now)
      .setExpirationTime(now + ttlSec)
      .setJti(randomUUID())
      .sign(this.signing.key);
  }
}

function keyPath(dir: string): string {
  return join(dir, 'issuer-keys.json');
}

function jwksPath(dir: string): string {
  return join(dir, 'jwks.json');
}

function readKeys(dir: string): KeyFile {
  return JSON.parse(readFileSync(keyPath(dir), 'utf8')) as KeyFile;
}

async function signingKey(file: KeyFile): Promise<{ kid: string; key: SigningKey }> {
  const [newest] = file.keys;
  if (!newest?.kid) throw new Error('issuer key file holds no key');
  return { kid: newest.kid, key: await importJWK(newest, ALG) };
}

async function addKey(dir: string, file: KeyFile): Promise<void> {
  const pair = await generateKeyPair(ALG, { extractable: true });
  const jwk = { ...(await exportJWK(pair.privateKey)), kid: randomUUID(), alg: ALG, use: 'sig' };
  const next: KeyFile = { keys: [jwk, ...file.keys] };
  const publicKeys = next.keys.map(({ d: _d, ...pub }) => pub);
  // The JWKS is replaced before the key that signs with it: a verifier never sees an unknown kid.
  writeAtomically(jwksPath(dir), JSON.stringify({ keys: publicKeys }, null, 2), 0o644);
  writeAtomically(keyPath(dir), JSON.stringify(next));
  chmodSync(keyPath(dir), 0o600);
}

export { DEV_TOKEN_TTL_SEC, writeAtomically };
