import { HOP_BUDGETS, JsonPeer, withHopRetries } from '@dlock/http-client';
import { BodyReader } from './body-reader';
import type { RailLookup, RailTransfer } from './wire';

/** S2: the rail's read-only lookup by client reference. Never writes to the rail. */
export class RailLookupClient {
  private readonly peer: JsonPeer;

  constructor(baseUrl: string) {
    this.peer = new JsonPeer('rail', baseUrl);
  }

  async lookup(clientRef: string, signal?: AbortSignal): Promise<RailLookup> {
    const answer = await withHopRetries(
      'advisoryRead',
      () =>
        this.peer.call<RailLookup>({
          method: 'GET',
          path: `/lookup?clientRef=${encodeURIComponent(clientRef)}`,
          budget: HOP_BUDGETS.advisoryRead,
          signal,
        }),
      signal,
    );
    const r = new BodyReader(this.peer.name, answer);
    return {
      clientRef: r.str('clientRef'),
      asOf: r.str('asOf'),
      settlementWindowMs: r.intOrNull('settlementWindowMs'),
      transfers: r.array('transfers').map((t) => this.transfer(t)),
    };
  }

  close(): void {
    this.peer.close();
  }

  private transfer(raw: unknown): RailTransfer {
    const t = new BodyReader(this.peer.name, raw);
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
}
