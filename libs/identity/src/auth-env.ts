import { env } from '@dlock/config';

/**
 * The variables every authenticating service reads (docs/security.md). All
 * are required: there is no setting under which a service skips the check.
 */
export const AUTH_ENV = {
  /** The issuer's public keys: a JWKS file path, or an http(s) URL (a cluster's OIDC JWKS). */
  AUTH_JWKS: env.string({ maxLength: 2048 }),
  /** The `iss` every accepted token must carry. */
  AUTH_ISSUER: env.string({ maxLength: 512 }),
  /** The authorisation policy file (YAML or JSON), read and validated once at start. */
  AUTH_POLICY: env.string({ maxLength: 1024 }),
};

/**
 * A service that calls others also reads where its own tokens are: a
 * directory with one token file per audience (`<dir>/lock-server`, …), as a
 * kubelet projects them and as the development issuer writes them.
 */
export const CALLER_AUTH_ENV = {
  AUTH_TOKEN_DIR: env.string({ maxLength: 1024 }),
};
