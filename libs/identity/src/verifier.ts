import { readFileSync } from 'node:fs';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  jwtVerify,
  type JSONWebKeySet,
  type JWTHeaderParameters,
  type FlattenedJWSInput,
  type JWTVerifyGetKey,
} from 'jose';
import { UnauthenticatedError } from './errors';

/** Asymmetric only: `none` and every HMAC alg are refused (a public key is no secret). */
export const ACCEPTED_ALGORITHMS = ['ES256', 'RS256'] as const;
/** A service token is well under 2 KiB; anything past this is refused unparsed. */
export const TOKEN_BYTES_MAX = 8 * 1024;
/** A JWKS file is re-read this often, and at most once a second on an unknown key id. */
export const JWKS_FILE_RELOAD_MS = 30_000;
const JWKS_UNKNOWN_KID_COOLDOWN_MS = 1_000;
/** A verified token is remembered this long at most (bounds how late a removed key is noticed). */
export const VERIFIED_CACHE_MS = 30_000;
const VERIFIED_CACHE_MAX = 4_096;
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

export interface VerifierOptions {
  /** Where the public keys are: a JWKS file path, or an http(s) URL (the cluster's OIDC JWKS). */
  jwks: string;
  issuer: string;
  /** This service's name: a token addressed to another service is refused. */
  audience: string;
  clockToleranceSec?: number;
  now?: () => number;
}

export interface VerifiedIdentity {
  /**
   * The owner the request acts as: the token's `sub`, or, for a Kubernetes
   * pod-bound service-account token, the pod's name (each replica is its own
   * worker, docs/security.md).
   */
  subject: string;
  expiresAtMs: number;
  /**
   * Set when a delegating caller (the console) sent the request for the
   * person named by `subject`: the caller's own identity (docs/security.md,
   * "Acting for a person").
   */
  via?: string;
}

/**
 * Checks `Authorization: Bearer <JWT>` on every request (docs/security.md):
 * signature against the JWKS, `iss`, `aud`, `exp`. A token already verified is
 * remembered until it expires or VERIFIED_CACHE_MS pass, whichever is first,
 * so the hot path pays one map lookup.
 */
export class TokenVerifier {
  private readonly keys: JWTVerifyGetKey;
  private readonly verified = new Map<string, { identity: VerifiedIdentity; untilMs: number }>();
  private readonly now: () => number;

  constructor(private readonly options: VerifierOptions) {
    this.now = options.now ?? Date.now;
    this.keys = /^https?:\/\//.test(options.jwks)
      ? createRemoteJWKSet(new URL(options.jwks), {
          timeoutDuration: 2_000,
          cooldownDuration: 30_000,
          cacheMaxAge: 600_000,
        })
      : fileKeySet(options.jwks, this.now);
  }

  /** The identity of a request, or UnauthenticatedError (401). */
  async verify(authorization: string | string[] | undefined): Promise<VerifiedIdentity> {
    return this.verifyCompact(bearerToken(authorization));
  }

  /**
   * A bare compact JWT (no `Bearer `), as a header other than Authorization
   * carries one (X-Acting-For); `what` names that header in the refusal.
   */
  async verifyJwt(value: string | string[] | undefined, what: string): Promise<VerifiedIdentity> {
    if (typeof value !== 'string') throw new UnauthenticatedError(`${what} must be one JWT`);
    if (value.length > TOKEN_BYTES_MAX)
      throw new UnauthenticatedError(`${what} longer than ${TOKEN_BYTES_MAX} bytes`);
    if (!COMPACT_JWS.test(value)) throw new UnauthenticatedError(`${what} must be one JWT`);
    return this.verifyCompact(value);
  }

  private async verifyCompact(token: string): Promise<VerifiedIdentity> {
    const now = this.now();
    const hit = this.verified.get(token);
    if (hit && now < hit.untilMs) return hit.identity;
    if (hit) this.verified.delete(token);
    const identity = await this.check(token, now);
    if (this.verified.size >= VERIFIED_CACHE_MAX) this.verified.clear();
    this.verified.set(token, {
      identity,
      untilMs: Math.min(identity.expiresAtMs, now + VERIFIED_CACHE_MS),
    });
    return identity;
  }

  private async check(token: string, now: number): Promise<VerifiedIdentity> {
    try {
      const { payload } = await jwtVerify(token, this.keys, {
        algorithms: [...ACCEPTED_ALGORITHMS],
        issuer: this.options.issuer,
        audience: this.options.audience,
        requiredClaims: ['exp', 'sub'],
        clockTolerance: this.options.clockToleranceSec ?? 5,
        currentDate: new Date(now),
      });
      if (typeof payload.sub !== 'string' || payload.sub === '' || payload.sub.length > 256)
        throw new UnauthenticatedError('token subject is missing or too long');
      return { subject: podName(payload) ?? payload.sub, expiresAtMs: payload.exp! * 1000 };
    } catch (err) {
      if (err instanceof UnauthenticatedError) throw err;
      throw new UnauthenticatedError(refusal(err));
    }
  }
}

/** `kubernetes.io.pod.name` of a projected service-account token, if it is one. */
function podName(payload: Record<string, unknown>): string | undefined {
  const k8s = payload['kubernetes.io'] as { pod?: { name?: unknown } } | undefined;
  const name = k8s?.pod?.name;
  return typeof name === 'string' && name !== '' && name.length <= 253 ? name : undefined;
}

function bearerToken(authorization: string | string[] | undefined): string {
  if (authorization === undefined) throw new UnauthenticatedError('Authorization header missing');
  if (typeof authorization !== 'string')
    throw new UnauthenticatedError('more than one Authorization header');
  if (authorization.length > TOKEN_BYTES_MAX + 7)
    throw new UnauthenticatedError(`token longer than ${TOKEN_BYTES_MAX} bytes`);
  const match = /^Bearer ([^\s]+)$/.exec(authorization);
  if (!match || !COMPACT_JWS.test(match[1]))
    throw new UnauthenticatedError('Authorization must be "Bearer <JWT>"');
  return match[1];
}

/** Says why, in the caller's terms; never echoes the token. */
function refusal(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  const claim = (err as { claim?: unknown }).claim;
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return 'token expired';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      return `token claim ${typeof claim === 'string' ? claim : ''} not accepted`.replace(
        '  ',
        ' ',
      );
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return 'token algorithm not accepted';
    case 'ERR_JWKS_NO_MATCHING_KEY':
      return 'token key id unknown';
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return 'token signature does not verify';
    default:
      return 'token malformed';
  }
}

/**
 * Keys from a JWKS file, re-read periodically and on an unknown key id (a
 * rotation). A file not there yet (an issuer that starts after the service,
 * as compose's identity service may) is an empty key set: every token is
 * refused until it appears. A file that is there but is no JWKS stops the boot.
 */
function fileKeySet(path: string, now: () => number): JWTVerifyGetKey {
  const load = () => {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      text = '{"keys":[]}';
    }
    const set = JSON.parse(text) as JSONWebKeySet;
    if (!Array.isArray(set.keys)) throw new Error(`${path} is not a JWKS (no "keys" array)`);
    return createLocalJWKSet(set);
  };
  let current = load();
  let loadedAt = now();
  const reload = () => {
    try {
      current = load();
    } catch {
      // A file caught mid-rewrite by a non-atomic writer: keep the keys we had.
    }
    loadedAt = now();
  };
  return async (header: JWTHeaderParameters, token: FlattenedJWSInput) => {
    if (now() - loadedAt >= JWKS_FILE_RELOAD_MS) reload();
    try {
      return await current(header, token);
    } catch (err) {
      const unknownKid = (err as { code?: unknown }).code === 'ERR_JWKS_NO_MATCHING_KEY';
      if (!unknownKid || now() - loadedAt < JWKS_UNKNOWN_KID_COOLDOWN_MS) throw err;
      reload();
      return current(header, token);
    }
  };
}
