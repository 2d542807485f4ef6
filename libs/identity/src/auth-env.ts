import { EnvString } from '@dlock/config';
import type { VerifierOptions } from './verifier';

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

/**
 * The variables every authenticating service reads (docs/security.md). All
 * are required: there is no setting under which a service skips the check.
 * An app's environment class extends this one.
 */
export class AuthEnv extends OperatorAuthEnv {
  /** The issuer's public keys: a JWKS file path, or an http(s) URL (a cluster's OIDC JWKS). */
  @EnvString({ maxLength: 2048 }) readonly AUTH_JWKS!: string;
  /** The `iss` every accepted token must carry. */
  @EnvString({ maxLength: 512 }) readonly AUTH_ISSUER!: string;
  /** The authorisation policy file (YAML or JSON), read and validated once at start. */
  @EnvString({ maxLength: 1024 }) readonly AUTH_POLICY!: string;
}

/**
 * A service that calls others also reads where its own tokens are: a
 * directory with one token file per audience (`<dir>/lock-server`, …), as a
 * kubelet projects them and as the development issuer writes them.
 */
export class CallerAuthEnv extends AuthEnv {
  @EnvString({ maxLength: 1024 }) readonly AUTH_TOKEN_DIR!: string;
}

/** The verifier of people's tokens, its unset parts taken from the service's own issuer. */
export function operatorVerifierOptions(
  env: OperatorAuthEnv & { AUTH_JWKS: string; AUTH_ISSUER: string },
): VerifierOptions {
  return {
    jwks: env.AUTH_OPERATOR_JWKS ?? env.AUTH_JWKS,
    issuer: env.AUTH_OPERATOR_ISSUER ?? env.AUTH_ISSUER,
    audience: env.AUTH_OPERATOR_AUDIENCE,
  };
}

/** What serveHttpApp needs to authenticate and authorise (libs/http-contract). */
export function serviceAuthOptions(env: AuthEnv): {
  jwks: string;
  issuer: string;
  policyFile: string;
  operator: VerifierOptions;
} {
  return {
    jwks: env.AUTH_JWKS,
    issuer: env.AUTH_ISSUER,
    policyFile: env.AUTH_POLICY,
    operator: operatorVerifierOptions(env),
  };
}
