import { EnvString } from '@dlock/config';

/**
 * The variables every authenticating service reads (docs/security.md). Both
 * are required: there is no setting under which a service skips the check.
 * An app's environment class extends this one.
 */
export class AuthEnv {
  /** The issuer's public keys: a JWKS file path, or an http(s) URL (a cluster's OIDC JWKS). */
  @EnvString({ maxLength: 2048 }) readonly AUTH_JWKS!: string;
  /** The `iss` every accepted token must carry. */
  @EnvString({ maxLength: 512 }) readonly AUTH_ISSUER!: string;
}

/**
 * A service that calls others also reads where its own tokens are: a
 * directory with one token file per audience (`<dir>/lock-server`, …), as a
 * kubelet projects them and as the development issuer writes them.
 */
export class CallerAuthEnv extends AuthEnv {
  @EnvString({ maxLength: 1024 }) readonly AUTH_TOKEN_DIR!: string;
}
