import { randomUUID } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
// jose-free, so that fileTokenProvider (./token-files) loads no ESM-only package.
import { DEV_TOKEN_TTL_SEC, keptMode, writeAtomically } from './files';

/** The `iss` of every development token; the services are told to expect it. */
export const DEV_ISSUER = 'https://dlock.dev-issuer.local';
export const DEV_TOKEN_TTL_MAX_SEC = 3_600;
const ALG = 'ES256';
type SigningKey = Awaited<ReturnType<typeof importJWK>>;

interface KeyFile {
  /** Newest first; the first signs, every one is published (old tokens keep verifying). */
  keys: JWK[];
  /** When each key was made (ISO 8601); absent from issuers made before it was kept. */
  created?: Record<string, string>;
  /** Keys no longer published, newest last (at most RETIRED_KEPT), for `npm run keys list`. */
  retired?: { kid: string; createdAt?: string; retiredAt: string }[];
}

const RETIRED_KEPT = 16;

/** The issuer's keys as `npm run keys list` shows them. */
export interface IssuerKeys {
  keys: { kid: string; signs: boolean; createdAt?: string }[];
  retired: { kid: string; createdAt?: string; retiredAt: string }[];
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
    private signing: { kid: string; key: SigningKey; version: string },
  ) {}

  get jwksPath(): string {
    return jwksPath(this.dir);
  }

  /** Opens the issuer kept in `dir`, generating its first key pair if there is none. */
  static async open(dir: string): Promise<DevIssuer> {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!existsSync(keyPath(dir))) await addKey(dir, { keys: [] });
    return new DevIssuer(dir, await signingKey(dir));
  }

  /** The key that signs now (`npm run keys list`). */
  get kid(): string {
    return this.signing.kid;
  }

  /**
   * A new signing key; the old public keys stay in the JWKS so tokens already
   * minted verify until they expire (docs/security.md, key rotation). Returns its kid.
   */
  async rotate(keep = 2): Promise<string> {
    const file = readKeys(this.dir);
    const kept = file.keys.slice(0, Math.max(1, keep - 1));
    const retiredAt = new Date().toISOString();
    const gone = file.keys.slice(kept.length).map((k) => ({
      kid: String(k.kid),
      createdAt: file.created?.[String(k.kid)],
      retiredAt,
    }));
    const retired = [...(file.retired ?? []), ...gone].slice(-RETIRED_KEPT);
    await addKey(this.dir, { ...file, keys: kept, retired });
    this.signing = await signingKey(this.dir);
    return this.signing.kid;
  }

  /** Its keys, newest (signing) first, and those retired. */
  describe(): IssuerKeys {
    const file = readKeys(this.dir);
    return {
      keys: file.keys.map((k, i) => ({
        kid: String(k.kid),
        signs: i === 0,
        createdAt: file.created?.[String(k.kid)],
      })),
      retired: file.retired ?? [],
    };
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
    // Rotated by another process (`npm run keys rotate-issuer`): sign with the new key from now.
    if (keyFileVersion(this.dir) !== this.signing.version)
      this.signing = await signingKey(this.dir);
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

function keyFileVersion(dir: string): string {
  const st = statSync(keyPath(dir));
  return `${st.ino}:${st.mtimeMs}:${st.size}`;
}

async function signingKey(dir: string): Promise<{ kid: string; key: SigningKey; version: string }> {
  const version = keyFileVersion(dir);
  const [newest] = readKeys(dir).keys;
  if (!newest?.kid) throw new Error('issuer key file holds no key');
  return { kid: newest.kid, key: await importJWK(newest, ALG), version };
}

async function addKey(dir: string, file: KeyFile): Promise<void> {
  const pair = await generateKeyPair(ALG, { extractable: true });
  const jwk = { ...(await exportJWK(pair.privateKey)), kid: randomUUID(), alg: ALG, use: 'sig' };
  const created = { ...file.created, [jwk.kid]: new Date().toISOString() };
  for (const kid of Object.keys(created))
    if (!file.keys.some((k) => k.kid === kid) && kid !== jwk.kid) delete created[kid];
  const next: KeyFile = { ...file, keys: [jwk, ...file.keys], created };
  const publicKeys = next.keys.map(({ d: _d, ...pub }) => pub);
  // The JWKS is replaced before the key that signs with it: a verifier never sees an unknown kid.
  const mode = keptMode(jwksPath(dir));
  writeAtomically(jwksPath(dir), JSON.stringify({ keys: publicKeys }, null, 2), mode);
  chmodSync(jwksPath(dir), mode);
  writeAtomically(keyPath(dir), JSON.stringify(next));
  chmodSync(keyPath(dir), 0o600);
}

export { DEV_TOKEN_TTL_SEC, keptMode, writeAtomically };
