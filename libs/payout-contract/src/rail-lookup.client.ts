import { registerErrorCodes } from '@dlock/lock-api';
import { PAYOUT_ERROR_CODES } from './error-codes';
import { JsonPeer } from '@dlock/http-client';
import { advisoryGet } from './hops';
import { BodyReader } from './body-reader';
import type { RailLookup, RailTransfer } from './wire';

/** S2: the rail's read-only lookup by client reference. Never writes to the rail. */
export class RailLookupClient {
  private readonly peer: JsonPeer;

  constructor(baseUrl: string) {
    // Its answers carry the payout codes: known to whoever builds a client, app or test.
    registerErrorCodes(PAYOUT_ERROR_CODES);
    this.peer = new JsonPeer('rail', baseUrl);
  }

  async lookup(clientRef: string, signal?: AbortSignal): Promise<RailLookup> {
    const path = `/lookup?clientRef=${encodeURIComponent(clientRef)}`;
    return railLookupOf(this.peer.name, await advisoryGet<RailLookup>(this.peer, path, signal));
  }

  close(): void {
    this.peer.close();
  }
}

/** A rail lookup read strictly: the rail's own answer, or the one the proxy's R3 carries. */
export function railLookupOf(peer: string, raw: unknown): RailLookup {
  const r = new BodyReader(peer, raw);
  return {
    clientRef: r.str('clientRef'),
    asOf: r.str('asOf'),
    settlementWindowMs: r.intOrNull('settlementWindowMs'),
    transfers: r.array('transfers').map((t) => railTransfer(peer, t)),
  };
}

function railTransfer(peer: string, raw: unknown): RailTransfer {
  const t = new BodyReader(peer, raw);
  return {
    railReference: t.str('railReference'),
    clientRef: t.str('clientRef'),
    amountMinor: t.int('amountMinor'),
    currency: t.str('currency'),
    acceptedAt: t.str('acceptedAt'),
    settled: t.bool('settled'),
    settledAt: t.strOrNull('settledAt'),
    duplicateOf: t.strOrNull('duplicateOf'),
  };
}
