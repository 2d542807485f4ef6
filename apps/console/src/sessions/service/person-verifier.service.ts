import { existsSync } from 'node:fs';
import type { Request } from 'express';
import {
  operatorVerifierOptions,
  TokenVerifier,
  UnauthenticatedError,
  type VerifiedIdentity,
} from '@dlock/identity';
import type { ConsoleConfig } from '../../config';
import type { ConsoleSession, SessionStore } from './session-store.service';

/**
 * Checks a person's token exactly as the services will when it arrives in
 * X-Acting-For (docs/security.md, "Acting for a person"): the same issuer,
 * keys and audience (AUTH_OPERATOR_*, audience `console` by default), expiry.
 * With `header` sign-in the token comes from the proxy in front (IAP's
 * assertion, or an OIDC ID token), not from a form.
 */
export class PersonVerifier {
  private readonly verifier: TokenVerifier;
  readonly fromProxy: boolean;
  private readonly header: string;

  constructor(
    config: ConsoleConfig,
    private readonly store: SessionStore,
  ) {
    this.verifier = new TokenVerifier(operatorVerifierOptions(config));
    this.fromProxy = config.CONSOLE_SIGN_IN === 'header';
    this.header = config.CONSOLE_SIGN_IN_HEADER;
  }

  /** The person of a pasted token, or 401 saying which check failed. */
  verify(token: string): Promise<VerifiedIdentity> {
    return this.verifier.verifyJwt(token, 'token');
  }

  /** The person the proxy vouches for on this request, or 401. */
  async fromRequest(req: Request): Promise<{ identity: VerifiedIdentity; token: string }> {
    const token = this.proxyToken(req);
    if (token === undefined) throw new UnauthenticatedError(`no ${this.header} header`);
    return { identity: await this.verifier.verifyJwt(token, this.header), token };
  }

  /**
   * Takes the proxy's newer token for the same person into the session; false
   * when it names someone else (the session must end). A request without
   * one, or with one that does not verify, leaves the session as it was.
   */
  async refresh(req: Request, session: ConsoleSession): Promise<boolean> {
    if (this.proxyToken(req) === undefined) return true;
    let fresh: { identity: VerifiedIdentity; token: string };
    try {
      fresh = await this.fromRequest(req);
    } catch (err) {
      if (err instanceof UnauthenticatedError) return true;
      throw err;
    }
    if (fresh.identity.subject !== session.subject) return false;
    if (fresh.identity.expiresAtMs > session.expiresAtMs)
      this.store.refresh(session, fresh.token, fresh.identity.expiresAtMs);
    return true;
  }

  private proxyToken(req: Request): string | undefined {
    const raw = req.headers[this.header];
    if (typeof raw !== 'string') return undefined;
    return raw.startsWith('Bearer ') ? raw.slice('Bearer '.length) : raw;
  }
}

/**
 * Says at boot that nobody can sign in yet: the keys people's tokens are
 * checked with are a file that does not exist (fail closed, docs/console.md).
 */
export function warnWithoutJwks(
  config: ConsoleConfig,
  log: { warn(fields: object, message: string): void },
): void {
  const jwks = config.AUTH_OPERATOR_JWKS ?? config.AUTH_JWKS;
  if (!/^https?:\/\//.test(jwks) && !existsSync(jwks))
    log.warn({ jwks }, `no JWKS at ${jwks} yet: nobody can sign in until it exists`);
}
