import { HOP_BUDGETS, JsonPeer, withHopRetries } from '@dlock/http-client';

/** One transfer the rail booked under a client reference (S2). */
export interface RailTransfer {
  railReference: string;
  clientRef: string;
  amountMinor: number;
  currency: string;
  acceptedAt: string;
  settled: boolean;
  settledAt: string | null;
  duplicateOf: string | null;
}

export interface RailLookup {
  clientRef: string;
  asOf: string;
  /** The rail's own settlement window, when it reports one. */
  settlementWindowMs: number | null;
  transfers: RailTransfer[];
}

function parseTransfer(raw: unknown): RailTransfer {
  const t = raw as Record<string, unknown>;
  const ok =
    typeof t === 'object' &&
    t !== null &&
    typeof t.railReference === 'string' &&
    typeof t.clientRef === 'string' &&
    typeof t.amountMinor === 'number' &&
    typeof t.currency === 'string' &&
    typeof t.acceptedAt === 'string' &&
    typeof t.settled === 'boolean';
  if (!ok) throw new TypeError('rail lookup: a transfer does not have the S2 shape');
  return {
    railReference: t.railReference as string,
    clientRef: t.clientRef as string,
    amountMinor: t.amountMinor as number,
    currency: t.currency as string,
    acceptedAt: t.acceptedAt as string,
    settled: t.settled as boolean,
    settledAt: typeof t.settledAt === 'string' ? t.settledAt : null,
    duplicateOf: typeof t.duplicateOf === 'string' ? t.duplicateOf : null,
  };
}

/** S2: the rail's read-only lookup by client reference. Never writes to the rail. */
export class RailLookupClient {
  private readonly peer: JsonPeer;

  constructor(baseUrl: string) {
    this.peer = new JsonPeer('rail', baseUrl);
  }

  async lookup(clientRef: string, signal?: AbortSignal): Promise<RailLookup> {
    const body = await withHopRetries<Record<string, unknown>>(
      'advisoryRead',
      () =>
        this.peer.call({
          method: 'GET',
          path: `/lookup?clientRef=${encodeURIComponent(clientRef)}`,
          budget: HOP_BUDGETS.advisoryRead,
          signal,
        }),
      signal,
    );
    if (!Array.isArray(body?.transfers)) throw new TypeError('rail lookup: no transfers[]');
    return {
      clientRef: typeof body.clientRef === 'string' ? body.clientRef : clientRef,
      asOf: typeof body.asOf === 'string' ? body.asOf : new Date().toISOString(),
      settlementWindowMs:
        typeof body.settlementWindowMs === 'number' ? body.settlementWindowMs : null,
      transfers: body.transfers.map(parseTransfer),
    };
  }
}
