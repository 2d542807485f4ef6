import type { TokenProvider } from '@dlock/identity';
import { formatFencingToken, type FencingToken } from '@dlock/lock-api';
import { HOP_BUDGETS, JsonPeer, withHopRetries } from '@dlock/http-client';

/** P1 item (C3 §3.4). */
export interface PayoutListItem {
  payoutId: string;
  accountId: string;
  amountMinor: number;
  currency: string;
  state: string;
  createdAt: string;
}

/** The P4 fields the reconciler reads (advisory: the fenced write decides). */
export interface PayoutDetail {
  payoutId: string;
  accountId: string;
  amountMinor: number;
  currency: string;
  clientRef: string;
  state: string;
  submissionId: string | null;
  submittedAt: string | null;
  ambiguousAt: string | null;
  createdAt: string;
}

export interface ResolveRequest {
  resolution: 'ACKED' | 'NOT_FOUND';
  evidence: string;
  railReference?: string;
  submissionId?: string;
}

export interface WriterIdentity {
  token: FencingToken;
  ownerId: string;
}

const LIST_PAGE = 100;

/** The stable per-payout idempotency key every writer of the payout shares (C3 §3.1). */
export function idempotencyKeyFor(payoutId: string): string {
  return `payout-${payoutId.toLowerCase()}`;
}

function str(o: Record<string, unknown>, k: string): string {
  const v = o[k];
  if (typeof v !== 'string') throw new TypeError(`payment-resource: ${k} is not a string`);
  return v;
}
function strOrNull(o: Record<string, unknown>, k: string): string | null {
  const v = o[k];
  if (v === null || v === undefined) return null;
  if (typeof v !== 'string') throw new TypeError(`payment-resource: ${k} is not a string`);
  return v;
}
function int(o: Record<string, unknown>, k: string): number {
  const v = o[k];
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) {
    throw new TypeError(`payment-resource: ${k} is not an integer`);
  }
  return v;
}

/** P1, P4 (advisory reads) and the fenced P8 and P3 writes. */
export class PaymentResourceClient {
  private readonly peer: JsonPeer;

  constructor(baseUrl: string, token?: TokenProvider) {
    this.peer = new JsonPeer('payment-resource', baseUrl, { token });
  }

  /** P1 over every page, up to `max` payouts. */
  async listAmbiguous(max: number, signal?: AbortSignal): Promise<PayoutListItem[]> {
    const out: PayoutListItem[] = [];
    let cursor: string | undefined;
    while (out.length < max) {
      const limit = Math.min(LIST_PAGE, max - out.length);
      const query = new URLSearchParams({ state: 'RAIL_AMBIGUOUS', limit: String(limit) });
      if (cursor !== undefined) query.set('cursor', cursor);
      const page = await withHopRetries<{
        items?: Record<string, unknown>[];
        nextCursor?: unknown;
      }>(
        'advisoryRead',
        () =>
          this.peer.call({
            method: 'GET',
            path: `/v1/payouts?${query.toString()}`,
            budget: HOP_BUDGETS.advisoryRead,
            signal,
          }),
        signal,
      );
      for (const item of page.items ?? []) {
        out.push({
          payoutId: str(item, 'payoutId'),
          accountId: str(item, 'accountId'),
          amountMinor: int(item, 'amountMinor'),
          currency: str(item, 'currency'),
          state: str(item, 'state'),
          createdAt: str(item, 'createdAt'),
        });
      }
      if (typeof page.nextCursor !== 'string') break;
      cursor = page.nextCursor;
    }
    return out;
  }

  /** P4. */
  async get(payoutId: string, signal?: AbortSignal): Promise<PayoutDetail> {
    const body = await withHopRetries<Record<string, unknown>>(
      'advisoryRead',
      () =>
        this.peer.call({
          method: 'GET',
          path: `/v1/payouts/${encodeURIComponent(payoutId)}`,
          budget: HOP_BUDGETS.advisoryRead,
          signal,
        }),
      signal,
    );
    return {
      payoutId: str(body, 'payoutId'),
      accountId: str(body, 'accountId'),
      amountMinor: int(body, 'amountMinor'),
      currency: str(body, 'currency'),
      clientRef: str(body, 'clientRef'),
      state: str(body, 'state'),
      submissionId: strOrNull(body, 'submissionId'),
      submittedAt: strOrNull(body, 'submittedAt'),
      ambiguousAt: strOrNull(body, 'ambiguousAt'),
      createdAt: str(body, 'createdAt'),
    };
  }

  /** P8: the only way out of RAIL_AMBIGUOUS, fenced with the reconciler's own token. */
  async resolve(
    payoutId: string,
    writer: WriterIdentity,
    body: ResolveRequest,
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>> {
    return await withHopRetries<Record<string, unknown>>(
      'fencedWrite',
      () =>
        this.peer.call({
          method: 'POST',
          path: `/v1/payouts/${encodeURIComponent(payoutId)}/resolve`,
          headers: this.writeHeaders(payoutId, writer),
          body,
          budget: HOP_BUDGETS.fencedWrite,
          signal,
        }),
      signal,
    );
  }

  /** P3: completes the posting of a payout the rail did pay, under the same token. */
  async post(
    payoutId: string,
    writer: WriterIdentity,
    body: { railReference: string; submissionId: string },
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>> {
    return await withHopRetries<Record<string, unknown>>(
      'fencedWrite',
      () =>
        this.peer.call({
          method: 'POST',
          path: `/v1/payouts/${encodeURIComponent(payoutId)}/post`,
          headers: this.writeHeaders(payoutId, writer),
          body: { ...body, railOutcome: 'ACKED' },
          budget: HOP_BUDGETS.fencedWrite,
          signal,
        }),
      signal,
    );
  }

  private writeHeaders(payoutId: string, writer: WriterIdentity): Record<string, string> {
    return {
      'x-fencing-token': formatFencingToken(writer.token),
      'x-owner-id': writer.ownerId,
      'x-idempotency-key': idempotencyKeyFor(payoutId),
    };
  }
}
