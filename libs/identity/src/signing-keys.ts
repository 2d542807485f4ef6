import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomUUID,
  sign,
  type JsonWebKey,
  type KeyObject,
} from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { keptMode, writeAtomically } from './files';

/**
 * A service's own signing keys (docs/security.md, "Signed grants"): the
 * lock-server's for grant proofs, payment-resource's for payout instructions.
 * Ed25519 (JWS `EdDSA`): small, fast, deterministic signatures — the same
 * claims signed twice with one key give the same proof.
 *
 * The ring is a JSON file `{ "keys": [JWK, …] }` holding private keys. The
 * first key signs; every key is published. Several replicas share one file
 * (a Kubernetes Secret); it is re-read when it changes, so a rotation needs
 * no restart: add a key (published, not yet signing), promote it once every
 * guard has re-read the public keys, retire the old one later.
 */

export const SIGNING_ALG = 'EdDSA';
/** How often a ring file is checked for a rotation. */
export const KEY_RING_RELOAD_MS = 30_000;
const KEYS_MAX = 16;

export interface PrivateJwk extends JsonWebKey {
  kid: string;
  d: string;
}

interface RingFile {
  keys: PrivateJwk[];
  /** When each key was added (ISO 8601): written by the rotation steps, absent from older rings. */
  created?: Record<string, string>;
  /** The keys retired so far, newest last (at most RETIRED_KEPT), for `npm run keys list`. */
  retired?: RetiredKey[];
}

export interface RetiredKey {
  kid: string;
  createdAt?: string;
  retiredAt: string;
}

/** One key of a ring as `npm run keys list` shows it: the first signs, every one is published. */
export interface RingKey {
  kid: string;
  signs: boolean;
  createdAt?: string;
}

const RETIRED_KEPT = 16;

/** Told the key a ring signs with, when it is opened and whenever a rotation changes it. */
export type SigningKeyListener = (kid: string, published: number) => void;

interface LoadedRing {
  kid: string;
  key: KeyObject;
  publicJwks: { keys: JsonWebKey[] };
  /** Which file this was read from: a rotation replaces the file (a new inode). */
  version: string;
}

/** A bad or unreadable key ring: stops the service at boot, like any configuration error. */
export class KeyRingError extends Error {
  override readonly name = 'KeyRingError';
}

export class SigningKeyRing {
  private ring: LoadedRing;
  private checkedAtMs: number;

  private constructor(
    readonly path: string,
    private readonly now: () => number,
    private readonly onSigningKey: SigningKeyListener,
  ) {
    this.ring = loadRing(path);
    this.checkedAtMs = now();
    onSigningKey(this.ring.kid, this.ring.publicJwks.keys.length);
  }

  /**
   * Reads and checks the ring at `path`; throws KeyRingError naming the problem. The services
   * pass `onSigningKey` to log which key signs at boot and after each promotion
   * (docs/security.md, "Rotating the signing keys").
   */
  static open(
    path: string,
    now: () => number = Date.now,
    onSigningKey: SigningKeyListener = () => undefined,
  ): SigningKeyRing {
    return new SigningKeyRing(path, now, onSigningKey);
  }

  /** The key id proofs are signed with now. */
  get kid(): string {
    return this.current().kid;
  }

  /** The public half of every key in the ring, as a JWKS (served to guards). */
  get publicJwks(): { keys: JsonWebKey[] } {
    return this.current().publicJwks;
  }

  /** A compact JWS of `payload` with the current key, its `typ` header set to `typ`. */
  sign(typ: string, payload: object): string {
    const { kid, key } = this.current();
    const header = b64(JSON.stringify({ alg: SIGNING_ALG, kid, typ }));
    const body = b64(JSON.stringify(payload));
    const input = `${header}.${body}`;
    return `${input}.${sign(null, Buffer.from(input), key).toString('base64url')}`;
  }

  /** The ring as last read; re-read when the file changed, checked at most every KEY_RING_RELOAD_MS. */
  private current(): LoadedRing {
    const now = this.now();
    if (now - this.checkedAtMs < KEY_RING_RELOAD_MS) return this.ring;
    this.checkedAtMs = now;
    const before = this.ring;
    try {
      if (fileVersion(this.path) !== before.version) this.ring = loadRing(this.path);
    } catch {
      // A file caught mid-rotation (or gone): keep signing with the keys we have.
    }
    if (this.ring.kid !== before.kid)
      this.onSigningKey(this.ring.kid, this.ring.publicJwks.keys.length);
    return this.ring;
  }
}

function b64(text: string): string {
  return Buffer.from(text).toString('base64url');
}

function fileVersion(path: string): string {
  const st = statSync(path);
  return `${st.ino}:${st.mtimeMs}:${st.size}`;
}

function loadRing(path: string): LoadedRing {
  let file: RingFile;
  let version: string;
  try {
    version = fileVersion(path);
    file = JSON.parse(readFileSync(path, 'utf8')) as RingFile;
  } catch (err) {
    throw new KeyRingError(`cannot read signing keys ${path}: ${(err as Error).message}`);
  }
  if (!Array.isArray(file?.keys) || file.keys.length === 0 || file.keys.length > KEYS_MAX) {
    throw new KeyRingError(`${path}: "keys" must list 1..${KEYS_MAX} private keys`);
  }
  const publicKeys = file.keys.map((jwk, i) => publicHalf(path, jwk, i));
  const [first] = file.keys;
  return {
    kid: first.kid,
    key: privateKey(path, first),
    publicJwks: { keys: publicKeys },
    version,
  };
}

function privateKey(path: string, jwk: PrivateJwk): KeyObject {
  try {
    const key = createPrivateKey({ key: jwk, format: 'jwk' });
    if (key.asymmetricKeyType !== 'ed25519') throw new Error('not an Ed25519 key');
    return key;
  } catch (err) {
    throw new KeyRingError(`${path}: key ${jwk.kid}: ${(err as Error).message}`);
  }
}

function publicHalf(path: string, jwk: PrivateJwk, index: number): JsonWebKey {
  if (typeof jwk?.kid !== 'string' || jwk.kid === '' || typeof jwk.d !== 'string') {
    throw new KeyRingError(`${path}: keys.${index} needs a kid and its private part`);
  }
  privateKey(path, jwk);
  const { d: _d, ...pub } = jwk;
  return { ...pub, alg: SIGNING_ALG, use: 'sig' };
}

function newKey(): PrivateJwk {
  const { privateKey: key } = generateKeyPairSync('ed25519');
  return {
    ...key.export({ format: 'jwk' }),
    kid: randomUUID(),
    alg: SIGNING_ALG,
    use: 'sig',
  } as PrivateJwk;
}

/** Where the public half of the ring at `ringPath` is written: `<name>.jwks.json` beside it. */
export function publicJwksPath(ringPath: string): string {
  return ringPath.replace(/(\.json)?$/, '.jwks.json');
}

function writeRing(path: string, file: RingFile): void {
  const publicKeys = file.keys.map((k, i) => publicHalf(path, k, i));
  const jwks = publicJwksPath(path);
  // The public keys are written before the ring that signs with them: a guard
  // reading the file never meets a proof whose key it could not have seen.
  const mode = keptMode(jwks);
  writeAtomically(jwks, JSON.stringify({ keys: publicKeys }, null, 2), mode);
  chmodSync(jwks, mode); // the process's umask does not decide it either
  writeAtomically(path, JSON.stringify(file));
  chmodSync(path, 0o600);
}

function readRing(path: string): RingFile {
  return JSON.parse(readFileSync(path, 'utf8')) as RingFile;
}

/**
 * A ring with one fresh key at `path` unless one is there (npm start, tests);
 * its public JWKS is written beside it (publicJwksPath). Returns both paths.
 */
export function ensureSigningKeys(path: string): { keys: string; jwks: string } {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  if (!existsSync(path)) {
    const key = newKey();
    writeRing(path, { keys: [key], created: { [key.kid]: new Date().toISOString() } });
  } else if (!existsSync(publicJwksPath(path))) writeRing(path, readRing(path));
  return { keys: path, jwks: publicJwksPath(path) };
}

/** Rotation step 1: a new key, published, not yet signing. Returns its kid. */
export function addSigningKey(path: string): string {
  const file = readRing(path);
  const key = newKey();
  const created = { ...file.created, [key.kid]: new Date().toISOString() };
  writeRing(path, { ...file, keys: [...file.keys, key], created });
  return key.kid;
}

/** Rotation step 2: `kid` signs from now on (the others stay published). */
export function promoteSigningKey(path: string, kid: string): void {
  const file = readRing(path);
  const key = file.keys.find((k) => k.kid === kid);
  if (!key) throw new KeyRingError(`${path}: no key ${kid}`);
  writeRing(path, { ...file, keys: [key, ...file.keys.filter((k) => k.kid !== kid)] });
}

/** Rotation step 3: `kid` is no longer published; proofs signed with it stop verifying. */
export function retireSigningKey(path: string, kid: string): void {
  const file = readRing(path);
  if (file.keys[0]?.kid === kid)
    throw new KeyRingError(`${path}: ${kid} still signs; promote another first`);
  if (!file.keys.some((k) => k.kid === kid)) throw new KeyRingError(`${path}: no key ${kid}`);
  const { [kid]: createdAt, ...created } = file.created ?? {};
  const gone: RetiredKey = { kid, createdAt, retiredAt: new Date().toISOString() };
  const retired = [...(file.retired ?? []), gone].slice(-RETIRED_KEPT);
  writeRing(path, { keys: file.keys.filter((k) => k.kid !== kid), created, retired });
}

/** The ring at `path` as `npm run keys list` shows it: its keys (the first signs) and the retired. */
export function describeSigningKeys(path: string): { keys: RingKey[]; retired: RetiredKey[] } {
  loadRing(path); // checked as a service would read it
  const file = readRing(path);
  return {
    keys: file.keys.map((k, i) => ({
      kid: k.kid,
      signs: i === 0,
      createdAt: file.created?.[k.kid],
    })),
    retired: file.retired ?? [],
  };
}

/** The public key of a JWK (for verifiers). */
export function publicKeyOf(jwk: JsonWebKey): KeyObject {
  return createPublicKey({ key: jwk, format: 'jwk' });
}
