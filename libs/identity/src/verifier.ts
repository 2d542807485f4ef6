import { readFileSync } from 'node:fs';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  jwtVerify,
  type JSONWebKeySet,
  type JWTHeaderParameters,
  type JWTPayload,
  type FlattenedJWSInput,
  type JWTVerifyGetKey,
} from 'jose';
import { counter } from '@dlock/metrics';
import { UnauthenticatedError } from './errors';
import { plainSubject } from './subjects';

/** Asymmetric only: `none` and every HMAC alg are refused (a public key is no secret). */
export const ACCEPTED_ALGORITHMS = ['ES256', 'RS256'] as const;
/** A service token is well under 2 KiB; anything past this is refused unparsed. */
export const TOKEN_BYTES_MAX = 8 * 1024;
/** A JWKS file is re-read this often, and at most once a second on an unknown key id. */
export const JWKS_FILE_RELOAD_MS = 30_000;
const JWKS_UNKNOWN_KID_COOLDOWN_MS = 1_000;
/** A verified token is remembered this long at most (bounds how late a removed key is noticed). */
export const VERIFIED_CACHE_MS = 30_000;
/** Verified tokens remembered at once; past it the least recently used is forgotten. */
export const VERIFIED_CACHE_MAX = 4_096;
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** The longest `exp - iat` accepted by default: a projected token's hour (docs/security.md). */
export const TOKEN_LIFETIME_MAX_MS_DEFAULT = 3_600_000;
const CLOCK_TOLERANCE_SEC_DEFAULT = 5;

/**
 * How Kubernetes service-account tokens name their caller (docs/security.md,
 * "Kubernetes tokens"). Without it, such a token is its full `sub`.
 */
export interface KubernetesIdentityOptions {
  /** Service-account tokens of any other namespace are refused. */
  namespace?: string;
  /** Service accounts of `namespace` whose pods are each their own identity (the pod's name). */
  podServiceAccounts?: readonly string[];
}

export interface VerifierOptions {
  /** Where the public keys are: a JWKS file path, or an http(s) URL (the cluster's OIDC JWKS). */
  jwks: string;
  issuer: string;
  /** This service's name: a token addressed to another service is refused. */
  audience: string;
  /** The longest `exp - iat` accepted; TOKEN_LIFETIME_MAX_MS_DEFAULT when absent. */
  tokenLifetimeMaxMs?: number;
  kubernetes?: KubernetesIdentityOptions;
  clockToleranceSec?: number;
  now?: () => number;
}

export interface VerifiedIdentity {
  /**
   * The owner the request acts as: the token's `sub`, or, for a pod-bound
   * token of a service account configured as one worker per pod, the pod's
   * name (each replica is its own worker, docs/security.md).
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
 * signature against the JWKS, `iss`, exactly one `aud` (this service), `exp`,
 * `iat` not ahead of the clock and a lifetime within the cap, then who a
 * Kubernetes service-account token stands for. A token already verified is
 * remembered (by its exact bytes, least recently used forgotten first) until
 * it expires or VERIFIED_CACHE_MS pass, whichever is first, so the hot path
 * pays one map lookup; requests that bring the same token while it is being
 * checked wait for that one check, so a burst of them costs one signature
 * verification (docs/security.md, "Limits").
 */
export class TokenVerifier {
  private readonly keys: JWTVerifyGetKey;
  private readonly verified = new Map<string, { identity: VerifiedIdentity; untilMs: number }>();
  private readonly checking = new Map<string, Promise<VerifiedIdentity>>();
  private readonly now: () => number;

  constructor(private readonly options: VerifierOptions) {
    this.now = options.now ?? Date.now;
    const lifetimeMaxMs = options.tokenLifetimeMaxMs ?? TOKEN_LIFETIME_MAX_MS_DEFAULT;
    if (!(Number.isSafeInteger(lifetimeMaxMs) && lifetimeMaxMs >= 1_000))
      throw new RangeError('tokenLifetimeMaxMs must be a whole number of milliseconds >= 1000');
    if (options.kubernetes?.podServiceAccounts?.length && !options.kubernetes.namespace)
      throw new RangeError('podServiceAccounts needs the namespace they belong to');
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
    this.verified.delete(token);
    if (hit && now < hit.untilMs) {
      // Re-inserted: the map's order is its recency, the first key the least recently used.
      this.verified.set(token, hit);
      return hit.identity;
    }
    let pending = this.checking.get(token);
    if (pending === undefined) {
      pending = this.checkAndRemember(token, now);
      this.checking.set(token, pending);
    }
    return pending;
  }

  private async checkAndRemember(token: string, now: number): Promise<VerifiedIdentity> {
    try {
      const identity = await this.check(token, now);
      if (this.verified.size >= VERIFIED_CACHE_MAX)
        this.verified.delete(this.verified.keys().next().value as string);
      this.verified.set(token, {
        identity,
        untilMs: Math.min(identity.expiresAtMs, now + VERIFIED_CACHE_MS),
      });
      return identity;
    } finally {
      this.checking.delete(token);
    }
  }

  /**
   * Who the token in `authorization` says it is, read WITHOUT checking its
   * signature or claims: the subject it would be verified as, or undefined.
   * Only for refusing a request early (an identity already at a limit); it
   * never admits or identifies anyone.
   */
  claimedSubject(authorization: string | string[] | undefined): string | undefined {
    try {
      const token = bearerToken(authorization);
      const hit = this.verified.get(token);
      if (hit) return hit.identity.subject;
      const payload = JSON.parse(
        Buffer.from(token.split('.')[1], 'base64url').toString('utf8'),
      ) as JWTPayload;
      if (typeof payload !== 'object' || payload === null || typeof payload.sub !== 'string')
        return undefined;
      return plainSubject(kubernetesIdentity(payload, payload.sub, this.options.kubernetes ?? {}));
    } catch {
      return undefined;
    }
  }

  private async check(token: string, now: number): Promise<VerifiedIdentity> {
    const toleranceSec = this.options.clockToleranceSec ?? CLOCK_TOLERANCE_SEC_DEFAULT;
    tokenChecks().inc();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.keys, {
        algorithms: [...ACCEPTED_ALGORITHMS],
        issuer: this.options.issuer,
        audience: this.options.audience,
        requiredClaims: ['exp', 'iat', 'sub'],
        clockTolerance: toleranceSec,
        currentDate: new Date(now),
      }));
    } catch (err) {
      throw new UnauthenticatedError(refusal(err));
    }
    // One audience: a token good at several services would be good at each of them.
    if (Array.isArray(payload.aud) && payload.aud.length !== 1)
      throw new UnauthenticatedError('token names more than one audience');
    const { iat, exp } = payload as { iat: number; exp: number };
    if (iat > now / 1000 + toleranceSec)
      throw new UnauthenticatedError('token issued in the future');
    const lifetimeMaxMs = this.options.tokenLifetimeMaxMs ?? TOKEN_LIFETIME_MAX_MS_DEFAULT;
    if ((exp - iat) * 1000 > lifetimeMaxMs)
      throw new UnauthenticatedError(`token lifetime longer than ${lifetimeMaxMs / 1000} s`);
    if (typeof payload.sub !== 'string' || payload.sub === '' || payload.sub.length > 256)
      throw new UnauthenticatedError('token subject is missing or too long');
    // One spelling per identity before any policy match (docs/security.md, "Identities").
    const subject = plainSubject(
      kubernetesIdentity(payload, payload.sub, this.options.kubernetes ?? {}),
    );
    if (subject === undefined)
      throw new UnauthenticatedError('token subject has characters outside the plain set');
    return { subject, expiresAtMs: exp * 1000 };
  }
}

/** Signature checks actually run: the verified cache's misses (docs/security.md, "Limits"). */
function tokenChecks() {
  return counter({
    name: 'auth_token_verifications_total',
    help: 'Bearer tokens whose signature and claims were checked (a token already verified is not counted again)',
  });
}

const SERVICE_ACCOUNT_SUBJECT = /^system:serviceaccount:([^:]+):([^:]+)$/;
const POD_NAME_LENGTH_MAX = 253;

interface KubernetesClaim {
  namespace?: unknown;
  pod?: { name?: unknown };
  serviceaccount?: { name?: unknown };
}

/**
 * Who a token stands for (docs/security.md, "Kubernetes tokens"): its `sub`,
 * unless it is a service-account token. Then the namespace and service
 * account are the ones its `sub` names, consistent with its `kubernetes.io`
 * claim; a configured namespace admits no other; and only a pod of a service
 * account configured as one worker per pod is identified by the pod's name.
 * A pod's name alone never says who it is: any namespace may name a pod so.
 */
function kubernetesIdentity(
  payload: JWTPayload,
  sub: string,
  options: KubernetesIdentityOptions,
): string {
  const claim = payload['kubernetes.io'];
  if (claim === undefined && !sub.startsWith('system:serviceaccount:')) return sub;
  const named = SERVICE_ACCOUNT_SUBJECT.exec(sub);
  if (!named)
    throw new UnauthenticatedError(
      'Kubernetes token subject is not system:serviceaccount:<namespace>:<name>',
    );
  const [, namespace, serviceAccount] = named;
  const k8s = (claim ?? {}) as KubernetesClaim;
  if (
    typeof k8s !== 'object' ||
    k8s === null ||
    Array.isArray(k8s) ||
    !matchesIfPresent(k8s.namespace, namespace) ||
    !matchesIfPresent(k8s.serviceaccount?.name, serviceAccount)
  ) {
    throw new UnauthenticatedError('token kubernetes.io claim does not match its subject');
  }
  if (options.namespace !== undefined && namespace !== options.namespace)
    throw new UnauthenticatedError(
      `service-account token from a namespace other than ${options.namespace}`,
    );
  if (!options.podServiceAccounts?.includes(serviceAccount)) return sub;
  const pod = k8s.pod?.name;
  if (typeof pod !== 'string' || pod === '' || pod.length > POD_NAME_LENGTH_MAX)
    throw new UnauthenticatedError(
      `token of service account ${serviceAccount} is not bound to a pod`,
    );
  return pod;
}

/** An absent claim says nothing; a present one must say the same as `sub`. */
function matchesIfPresent(value: unknown, expected: string): boolean {
  return value === undefined || value === expected;
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
  const { claim, reason } = err as { claim?: unknown; reason?: unknown };
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return 'token expired';
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      return `token claim ${typeof claim === 'string' ? claim : ''} ${
        reason === 'missing' ? 'missing' : 'not accepted'
      }`.replace('  ', ' ');
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
