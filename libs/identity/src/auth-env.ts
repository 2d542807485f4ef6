import { ValidateBy } from 'class-validator';
import { EnvInt, EnvString } from '@dlock/config';
import { TOKEN_LIFETIME_MAX_MS_DEFAULT, type VerifierOptions } from './verifier';

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
export class AuthEnv {
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

/** What a service's token check is built from: its validated auth variables. */
export function authOptions(
  env: AuthEnv,
): Omit<VerifierOptions, 'audience'> & { policyFile: string } {
  const podServiceAccounts = env.AUTH_K8S_POD_SERVICE_ACCOUNTS?.split(',');
  return {
    jwks: env.AUTH_JWKS,
    issuer: env.AUTH_ISSUER,
    policyFile: env.AUTH_POLICY,
    tokenLifetimeMaxMs: env.AUTH_TOKEN_LIFETIME_MAX_MS,
    kubernetes: { namespace: env.AUTH_K8S_NAMESPACE, podServiceAccounts },
  };
}
