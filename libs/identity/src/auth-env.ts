import { ValidateBy } from 'class-validator';
import { EnvInt, EnvString, type EnvClass } from '@dlock/config/env';
import { TOKEN_LIFETIME_MAX_MS_DEFAULT, type VerifierOptions } from './verifier';

/** The audience of a person's token: the console, which acts for them (docs/security.md). */
export const OPERATOR_AUDIENCE = 'console';

/**
 * Who may be acted for (docs/security.md, "Acting for a person"): the tokens a
 * delegating caller forwards in X-Acting-For are verified against this issuer,
 * these keys and this audience. Issuer and keys default to the service's own
 * (the development issuer mints people's tokens too); on GKE they name the
 * identity-aware proxy or the OIDC provider that signs people in.
 */
export class OperatorAuthEnv {
  @EnvString({ optional: true, maxLength: 2048 }) readonly AUTH_OPERATOR_JWKS?: string;
  @EnvString({ optional: true, maxLength: 512 }) readonly AUTH_OPERATOR_ISSUER?: string;
  @EnvString({ default: OPERATOR_AUDIENCE, maxLength: 512 })
  readonly AUTH_OPERATOR_AUDIENCE!: string;
}

/** A Kubernetes namespace or service-account name (an RFC 1123 label). */
const K8S_NAME = '[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?';

/** AUTH_K8S_POD_SERVICE_ACCOUNTS names service accounts of one namespace: it must be given. */
const needsNamespace = ValidateBy({
  name: 'needsK8sNamespace',
  validator: {
    validate: (_value, args) => Boolean((args?.object as AuthEnv).AUTH_K8S_NAMESPACE),
    defaultMessage: () => 'needs AUTH_K8S_NAMESPACE (the namespace of those service accounts)',
  },
});

/**
 * The variables every authenticating service reads (docs/security.md). The
 * three without a default are required: there is no setting under which a
 * service skips the check.
 * An app's environment class extends this one.
 */
export class AuthEnv extends OperatorAuthEnv {
  /** The issuer's public keys: a JWKS file path, or an http(s) URL (a cluster's OIDC JWKS). */
  @EnvString({ maxLength: 2048 }) readonly AUTH_JWKS!: string;
  /** The `iss` every accepted token must carry. */
  @EnvString({ maxLength: 512 }) readonly AUTH_ISSUER!: string;
  /** The authorisation policy file (YAML or JSON), read and validated once at start. */
  @EnvString({ maxLength: 1024 }) readonly AUTH_POLICY!: string;
  /** The longest `exp - iat` a token may have; a stolen token is good for at most this long. */
  @EnvInt({ default: TOKEN_LIFETIME_MAX_MS_DEFAULT, min: 60_000, max: 86_400_000 })
  readonly AUTH_TOKEN_LIFETIME_MAX_MS!: number;
  /** When set, Kubernetes service-account tokens of any other namespace are refused. */
  @EnvString({ optional: true, maxLength: 63, pattern: new RegExp(`^${K8S_NAME}$`) })
  readonly AUTH_K8S_NAMESPACE?: string;
  /**
   * Comma-separated service accounts of AUTH_K8S_NAMESPACE whose pods are
   * each their own identity, the pod's name (e.g. `executor,reconciler`).
   */
  @EnvString({
    optional: true,
    maxLength: 1024,
    pattern: new RegExp(`^${K8S_NAME}(,${K8S_NAME})*$`),
  })
  @needsNamespace
  readonly AUTH_K8S_POD_SERVICE_ACCOUNTS?: string;
}

/**
 * A service that calls others also reads where its own tokens are: a
 * directory with one token file per audience (`<dir>/lock-server`, …), as a
 * kubelet projects them and as the development issuer writes them.
 */
export class CallerAuthEnv extends AuthEnv {
  @EnvString({ maxLength: 1024 }) readonly AUTH_TOKEN_DIR!: string;
}

/**
 * A service that checks grant proofs reads the lock-server's public keys they are checked
 * against (docs/security.md, "Signed grants"): a JWKS file, or its /.well-known/jwks.json URL.
 */
export function GrantJwksEnv<B extends EnvClass>(Base: B) {
  class GrantJwks extends Base {
    @EnvString({ maxLength: 2048 }) readonly GRANT_JWKS!: string;
  }
  return GrantJwks;
}

/** The verifier of people's tokens, its unset parts taken from the service's own issuer. */
export function operatorVerifierOptions(
  env: OperatorAuthEnv & {
    AUTH_JWKS: string;
    AUTH_ISSUER: string;
    AUTH_TOKEN_LIFETIME_MAX_MS?: number;
  },
): VerifierOptions {
  return {
    jwks: env.AUTH_OPERATOR_JWKS ?? env.AUTH_JWKS,
    issuer: env.AUTH_OPERATOR_ISSUER ?? env.AUTH_ISSUER,
    audience: env.AUTH_OPERATOR_AUDIENCE,
    tokenLifetimeMaxMs: env.AUTH_TOKEN_LIFETIME_MAX_MS,
  };
}

/**
 * What serveHttpApp needs to authenticate and authorise (libs/http-contract):
 * the service's own token check, its policy, and the check of people's tokens.
 */
export function serviceAuthOptions(
  env: AuthEnv,
): Omit<VerifierOptions, 'audience'> & { policyFile: string; operator: VerifierOptions } {
  const podServiceAccounts = env.AUTH_K8S_POD_SERVICE_ACCOUNTS?.split(',');
  return {
    jwks: env.AUTH_JWKS,
    issuer: env.AUTH_ISSUER,
    policyFile: env.AUTH_POLICY,
    tokenLifetimeMaxMs: env.AUTH_TOKEN_LIFETIME_MAX_MS,
    kubernetes: { namespace: env.AUTH_K8S_NAMESPACE, podServiceAccounts },
    operator: operatorVerifierOptions(env),
  };
}
