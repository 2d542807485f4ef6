import { verify, type JsonWebKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PROOF_BYTES_MAX, ProofRejectedError, type ProofKind } from '@dlock/lock-api';
import { publicKeyOf, SIGNING_ALG } from './signing-keys';

/**
 * Verifies the compact JWS objects dlock's services sign for each other
 * (docs/security.md, "Signed grants"): grant proofs (lock-server's keys) and
 * payout instructions (payment-resource's keys). Offline: the public keys are
 * a JWKS file or URL, re-read every `reloadMs` and on an unknown key id (a
 * rotation), at most once per `unknownKidCooldownMs`. A proof verified once is
 * remembered for `rememberMs`, so the same proof presented at each write of a
 * critical section is checked once. What is remembered is only the last
 * `rememberMs` of proofs: a long-lived guard holds no more than a young one.
 */

const COMPACT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
export const VERIFIED_PROOF_CACHE_MS = 60_000;
const VERIFIED_PROOF_CACHE_MAX = 10_000;
const URL_FETCH_TIMEOUT_MS = 2_000;

export interface ProofVerifierOptions {
  /**
   * The signer's public keys: a JWKS file path, an http(s) URL (its
   * `/.well-known/jwks.json`), or the keys themselves (the signer checking its own proofs).
   */
  jwks: string | (() => { keys: JsonWebKey[] });
  /** The JWS `typ` this verifier accepts (GRANT_PROOF_TYPE, INSTRUCTION_TYPE, REVOCATION_NOTICE_TYPE). */
  type: string;
  kind: ProofKind;
  /** What a refusal calls the proof, in words a caller knows ("grant proof", "revocation notice"). */
  name: string;
  reloadMs?: number;
  unknownKidCooldownMs?: number;
  /**
   * How long a verified proof is remembered (VERIFIED_PROOF_CACHE_MS). 0 for a
   * guard that meets each proof once: memory there buys nothing.
   */
  rememberMs?: number;
  now?: () => number;
}

export class ProofVerifier {
  private keys = new Map<string, KeyObject>();
  private loadedAtMs = Number.NEGATIVE_INFINITY;
  private loading: Promise<void> | undefined;
  private readonly verified = new Map<string, { claims: unknown; untilMs: number }>();
  private readonly now: () => number;
  private readonly reloadMs: number;
  private readonly cooldownMs: number;
  private readonly rememberMs: number;

  constructor(private readonly options: ProofVerifierOptions) {
    this.now = options.now ?? Date.now;
    this.reloadMs = options.reloadMs ?? 30_000;
    this.cooldownMs = options.unknownKidCooldownMs ?? 1_000;
    this.rememberMs = options.rememberMs ?? VERIFIED_PROOF_CACHE_MS;
  }

  /**
   * Loads the keys now. At boot a JWKS file that is there but is no JWKS stops
   * the service; a file not written yet, or a URL not answering yet (the
   * signer starts after this guard), is an empty key set until it appears.
   */
  async start(): Promise<void> {
    const source = this.options.jwks;
    await this.reload(typeof source !== 'string' || !isUrl(source));
  }

  /** The payload of a genuine proof, or ProofRejectedError (missing, malformed, unknown key, signature). */
  async verify(proof: string | string[] | undefined): Promise<unknown> {
    const jws = this.shape(proof);
    const now = this.now();
    const hit = this.verified.get(jws);
    if (hit && now < hit.untilMs) return hit.claims;
    const [h, p, s] = jws.split('.');
    const header = this.json(h) as { alg?: unknown; kid?: unknown; typ?: unknown };
    if (
      header.alg !== SIGNING_ALG ||
      header.typ !== this.options.type ||
      typeof header.kid !== 'string'
    ) {
      throw this.refuse('malformed', `not a ${this.options.kind} proof (alg, typ or kid)`);
    }
    if (now - this.loadedAtMs >= this.reloadMs) await this.reload(false);
    let key = this.keys.get(header.kid);
    if (key === undefined && now - this.loadedAtMs >= this.cooldownMs) {
      await this.reload(false);
      key = this.keys.get(header.kid);
    }
    if (key === undefined)
      throw this.refuse('unknown-key', 'signed with a key this guard does not know');
    if (!verify(null, Buffer.from(`${h}.${p}`), key, Buffer.from(s, 'base64url'))) {
      throw this.refuse('signature', 'signature does not verify');
    }
    const claims = this.json(p);
    this.remember(jws, claims);
    return claims;
  }

  /**
   * A proof the signer itself just made is genuine: its own verifier remembers it
   * as verified, so the lock-server checks the proof of a release on the replica
   * that granted it without a signature verification.
   */
  remember(jws: string, claims: unknown): void {
    if (this.rememberMs === 0) return;
    const now = this.now();
    // Insertion order is expiry order (one lifetime for all): the expired are at the front.
    for (const [old, { untilMs }] of this.verified) {
      if (untilMs > now) break;
      this.verified.delete(old);
    }
    if (this.verified.size >= VERIFIED_PROOF_CACHE_MAX) this.verified.clear();
    this.verified.delete(jws); // a renew's proof moves to the back, keeping the order
    this.verified.set(jws, { claims, untilMs: now + this.rememberMs });
  }

  /** How many public keys are loaded: 0 means nothing can verify yet (a JWKS not there yet). */
  get knownKeys(): number {
    return this.keys.size;
  }

  /** How many verified proofs are remembered now. */
  get remembered(): number {
    return this.verified.size;
  }

  private shape(proof: string | string[] | undefined): string {
    if (proof === undefined || proof === '') throw this.refuse('missing', 'is missing');
    if (typeof proof !== 'string') throw this.refuse('malformed', 'was sent more than once');
    if (proof.length > PROOF_BYTES_MAX || !COMPACT.test(proof)) {
      throw this.refuse('malformed', 'is not a compact JWS');
    }
    return proof;
  }

  private json(part: string): unknown {
    try {
      const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
      if (typeof value === 'object' && value !== null) return value;
    } catch {
      // fall through
    }
    throw this.refuse('malformed', 'is not a compact JWS');
  }

  private refuse(reason: ConstructorParameters<typeof ProofRejectedError>[1], why: string) {
    return new ProofRejectedError(this.options.kind, reason, `${this.options.name} ${why}`);
  }

  /** One load at a time; a failed reload keeps the keys we had (a file mid-rewrite, a URL down). */
  private reload(strict: boolean): Promise<void> {
    this.loading ??= this.readKeys()
      .then((keys) => {
        this.keys = keys;
      })
      .catch((err: unknown) => {
        if (strict) throw err;
      })
      .finally(() => {
        this.loadedAtMs = this.now();
        this.loading = undefined;
      });
    return this.loading;
  }

  private async readKeys(): Promise<Map<string, KeyObject>> {
    const source = this.options.jwks;
    const set =
      typeof source === 'function'
        ? source()
        : (JSON.parse(isUrl(source) ? await fetchText(source) : readIfThere(source)) as {
            keys?: JsonWebKey[];
          });
    if (!Array.isArray(set.keys))
      throw new Error(`${String(source)} is not a JWKS (no "keys" array)`);
    const keys = new Map<string, KeyObject>();
    for (const jwk of set.keys) {
      const kid = (jwk as { kid?: unknown }).kid;
      if (typeof kid === 'string' && jwk.crv === 'Ed25519') keys.set(kid, publicKeyOf(jwk));
    }
    return keys;
  }
}

function isUrl(source: string): boolean {
  return /^https?:\/\//.test(source);
}

async function fetchText(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(URL_FETCH_TIMEOUT_MS) });
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
  return res.text();
}

function readIfThere(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '{"keys":[]}';
    throw err;
  }
}
