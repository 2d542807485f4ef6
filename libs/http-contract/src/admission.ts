import type { Request, Response } from 'express';
import { counter } from '@dlock/metrics';
import { ContentionError, type DlockError } from '@dlock/lock-api';
import type { TokenVerifier } from '@dlock/identity';

/**
 * How many requests one identity may have in flight in this process, and
 * which requests are never held back (docs/security.md, "Limits").
 */
export interface AdmissionLimits {
  /** Verified requests of one identity being served at once; one more is 429 before authentication. */
  inFlightPerOwnerMax: number;
  /** retryAfterMillis of that 429. */
  retryAfterMs: number;
  /** Requests neither counted nor refused here (giving back what an identity holds). */
  exempt?: (req: Request) => boolean;
}

const SHED_REASON = 'in-flight-per-owner';

/**
 * Sheds an identity's excess requests before their token is checked: the
 * expensive part of admitting a request (signature, claims, body, routing)
 * is not paid for a request that would only add to a flood.
 *
 * Only requests that passed authentication are counted, by their verified
 * identity, until their response ends. A new request is refused when the
 * identity its token CLAIMS (read without verification) is at its count:
 * a forged token naming someone else can be refused, never counted against
 * them, and nothing is ever admitted on a claim, since every request that
 * passes here is still authenticated in full.
 */
export class InFlightAdmission {
  private readonly inFlight = new Map<string, number>();

  constructor(readonly limits: AdmissionLimits) {
    // Exposed at 0 from the start, like every series an alert reads (docs/operations.md).
    shedCounter().inc({ reason: SHED_REASON }, 0);
  }

  /** Before authentication: 429 when the identity the request claims is at its limit. */
  shed(req: Request, verifier: TokenVerifier): DlockError | undefined {
    if (this.limits.exempt?.(req)) return undefined;
    const claimed = verifier.claimedSubject(req.headers.authorization);
    if (claimed === undefined) return undefined;
    const limit = this.limits.inFlightPerOwnerMax;
    if ((this.inFlight.get(claimed) ?? 0) < limit) return undefined;
    shedCounter().inc({ reason: SHED_REASON });
    return new ContentionError('too many requests of this identity in flight', {
      retryAfterMillis: this.limits.retryAfterMs,
      details: { reason: SHED_REASON, limit },
    });
  }

  /** After authentication: counts the request against `subject` until its response ends. */
  hold(subject: string, req: Request, res: Response): void {
    if (this.limits.exempt?.(req)) return;
    this.inFlight.set(subject, (this.inFlight.get(subject) ?? 0) + 1);
    // 'close' comes once per response, answered or abandoned by the caller.
    res.once('close', () => {
      const left = (this.inFlight.get(subject) ?? 1) - 1;
      if (left <= 0) this.inFlight.delete(subject);
      else this.inFlight.set(subject, left);
    });
  }
}

function shedCounter() {
  return counter({
    name: 'http_requests_shed_total',
    help: 'Requests refused 429 before authentication because their identity had too many in flight',
    labelNames: ['reason'],
  });
}
