import { parseFencingToken } from '@dlock/lock-api';
import { PeerProtocolError } from '@dlock/http-client';
import { isPayoutState, isRailOutcome, type PayoutState, type RailOutcome } from './payout-types';

/**
 * Reads a peer's 2xx body field by field. A field of the wrong type is the
 * peer breaking the contract: PeerProtocolError, never a value guessed.
 */
export class BodyReader {
  private readonly o: Record<string, unknown>;

  constructor(
    private readonly peer: string,
    body: unknown,
  ) {
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new PeerProtocolError(peer, 'the answer is not a JSON object', 200);
    this.o = body as Record<string, unknown>;
  }

  str(k: string): string {
    const v = this.o[k];
    if (typeof v !== 'string') throw this.bad(k, 'a string');
    return v;
  }

  strOrNull(k: string): string | null {
    return this.o[k] === null || this.o[k] === undefined ? null : this.str(k);
  }

  int(k: string): number {
    const v = this.o[k];
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw this.bad(k, 'a safe integer');
    return v;
  }

  intOrNull(k: string): number | null {
    return this.o[k] === null || this.o[k] === undefined ? null : this.int(k);
  }

  bool(k: string): boolean {
    const v = this.o[k];
    if (typeof v !== 'boolean') throw this.bad(k, 'a boolean');
    return v;
  }

  state(k: string): PayoutState {
    const v = this.o[k];
    if (!isPayoutState(v)) throw this.bad(k, 'a payout state');
    return v;
  }

  outcome(k: string): RailOutcome | null {
    const v = this.o[k] ?? null;
    if (v !== null && !isRailOutcome(v)) throw this.bad(k, 'a rail outcome or null');
    return v;
  }

  token(k: string): bigint {
    try {
      return parseFencingToken(this.o[k], k);
    } catch (err) {
      throw new PeerProtocolError(this.peer, `${k} is not a fencing token`, 200, err);
    }
  }

  /** An int64 >= 0 (a fence or mark that may not have moved yet: "0"). */
  fence(k: string): bigint {
    const v = this.o[k];
    if (v === '0') return 0n;
    return this.token(k);
  }

  object(k: string): Record<string, unknown> {
    const v = this.o[k];
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw this.bad(k, 'an object');
    return v as Record<string, unknown>;
  }

  array(k: string): unknown[] {
    const v = this.o[k];
    if (!Array.isArray(v)) throw this.bad(k, 'an array');
    return v;
  }

  private bad(k: string, what: string): PeerProtocolError {
    return new PeerProtocolError(this.peer, `${k} is not ${what}`, 200);
  }
}
