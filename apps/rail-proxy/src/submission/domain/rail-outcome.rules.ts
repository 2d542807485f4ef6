import { PeerUnavailableError } from '@dlock/http-client';

/** What the rail is asked to do: no token, no key — it is a third party (docs/rail.md). */
export interface RailTransfer {
  clientRef: string;
  amountMinor: number;
  currency: string;
}

export type AmbiguityReason =
  'read-timeout' | 'connection-reset' | 'rail-5xx' | 'malformed-ack' | 'unexpected-status';

/** Why nothing was written to the rail; the intent is withdrawn (docs/rail.md). */
export type NotPresentedReason = 'connection-closed-before-write' | 'deadline-too-short';

export type RailAnswer =
  | { kind: 'acked'; railReference: string }
  | { kind: 'declined'; status: number }
  | { kind: 'ambiguous'; reason: AmbiguityReason; status?: number }
  | { kind: 'not-presented'; reason: NotPresentedReason };

const RAIL_REFERENCE = /^[\x21-\x7e]{1,128}$/;

/** Only a well-formed 200 is an ack and only a 402 is a decline; anything else may have paid. */
export function classifyAnswer(status: number, text: string): RailAnswer {
  if (status === 200) {
    try {
      // A JSON null makes the property read throw, caught below.
      const body = JSON.parse(text) as { railReference?: unknown; acceptedAt?: unknown };
      if (
        typeof body.railReference === 'string' &&
        RAIL_REFERENCE.test(body.railReference) &&
        typeof body.acceptedAt === 'string'
      ) {
        return { kind: 'acked', railReference: body.railReference };
      }
    } catch {
      // fall through: an unparseable 200 is an ack we cannot read
    }
    return { kind: 'ambiguous', reason: 'malformed-ack', status };
  }
  if (status === 402) return { kind: 'declined', status };
  if (status >= 500) return { kind: 'ambiguous', reason: 'rail-5xx', status };
  return { kind: 'ambiguous', reason: 'unexpected-status', status };
}

/**
 * A rail call that got no answer. Only a connection that closed before the
 * request was written (phase `connect`) presented nothing; every other
 * failure came after the request may have arrived, so it may have paid.
 */
export function classifyFailure(err: unknown): RailAnswer {
  if (err instanceof PeerUnavailableError && err.neverPresented) {
    return { kind: 'not-presented', reason: 'connection-closed-before-write' };
  }
  const cause = (err as { cause?: unknown } | null)?.cause;
  if (cause instanceof DOMException && cause.name === 'TimeoutError') {
    return { kind: 'ambiguous', reason: 'read-timeout' };
  }
  // Past the answer size cap: whatever it said, we did not read it.
  if (cause instanceof RangeError) return { kind: 'ambiguous', reason: 'malformed-ack' };
  return { kind: 'ambiguous', reason: 'connection-reset' };
}
