import type { TokenProvider } from '@dlock/identity';
import { DlockError, formatFencingToken, parseFencingToken } from '@dlock/lock-api';
import { HOP_BUDGETS, JsonPeer, withHopRetries } from '@dlock/http-client';

/** One L8 revocation as GET /v1/revocations lists it. */
export interface Revocation {
  revocationId: string;
  key: string;
  revokedToken: bigint;
  newTokenFloor: bigint;
  revokedAt: Date;
}

export interface FloorRaise {
  revocationId: string;
  accountId: string;
  floor: bigint;
  reason: string;
}

/** What a guard did with a raise: moved, already past, or (payment-resource) no such account. */
export type RaiseResult = 'raised' | 'unchanged' | 'not_found';

function str(o: Record<string, unknown>, k: string): string {
  const v = o[k];
  if (typeof v !== 'string') throw new TypeError(`lock-server: ${k} is not a string`);
  return v;
}

/** The lock-server's revocation list (read-only, retried like every advisory read). */
export class RevocationsClient {
  private readonly peer: JsonPeer;

  constructor(baseUrl: string, token?: TokenProvider) {
    this.peer = new JsonPeer('lock-server', baseUrl, { token });
  }

  async list(afterFloor: bigint, limit: number, signal?: AbortSignal): Promise<Revocation[]> {
    const query = new URLSearchParams({ afterFloor: afterFloor.toString(), limit: String(limit) });
    const body = await withHopRetries<{ items?: Record<string, unknown>[] }>(
      'advisoryRead',
      () =>
        this.peer.call({
          method: 'GET',
          path: `/v1/revocations?${query.toString()}`,
          budget: HOP_BUDGETS.advisoryRead,
          signal,
        }),
      signal,
    );
    return (body.items ?? []).map((item) => ({
      revocationId: str(item, 'revocationId'),
      key: str(item, 'key'),
      revokedToken: parseFencingToken(str(item, 'revokedToken'), 'revokedToken'),
      newTokenFloor: parseFencingToken(str(item, 'newTokenFloor'), 'newTokenFloor'),
      revokedAt: new Date(str(item, 'revokedAt')),
    }));
  }
}

/**
 * The two guards' operator/reconciler raise endpoints. A raise is idempotent
 * (a floor already passed is a no-op), so transient failures are retried
 * like reads; a failure left over is retried by the next pass.
 */
export class GuardFloorClient {
  private readonly payments: JsonPeer;
  private readonly proxy: JsonPeer;

  constructor(
    paymentResourceUrl: string,
    railProxyUrl: string,
    private readonly operator: string,
    tokens: { paymentResource?: TokenProvider; railProxy?: TokenProvider } = {},
  ) {
    this.payments = new JsonPeer('payment-resource', paymentResourceUrl, {
      token: tokens.paymentResource,
    });
    this.proxy = new JsonPeer('rail-proxy', railProxyUrl, { token: tokens.railProxy });
  }

  async raiseAccountFence(raise: FloorRaise, signal?: AbortSignal): Promise<RaiseResult> {
    try {
      return await this.send(
        this.payments,
        `/v1/accounts/${encodeURIComponent(raise.accountId)}/fence-floor`,
        raise,
        signal,
      );
    } catch (err) {
      // paydb never had the account: nothing there for the revoked holder to write.
      if (err instanceof DlockError && err.code === 'NOT_FOUND') return 'not_found';
      throw err;
    }
  }

  raiseRailMark(raise: FloorRaise, signal?: AbortSignal): Promise<RaiseResult> {
    return this.send(
      this.proxy,
      `/v1/rail/high-water/${encodeURIComponent(raise.accountId)}/floor`,
      raise,
      signal,
    );
  }

  private async send(
    peer: JsonPeer,
    path: string,
    raise: FloorRaise,
    signal?: AbortSignal,
  ): Promise<RaiseResult> {
    const body = await withHopRetries<{ raised?: unknown }>(
      'idempotentWrite',
      () =>
        peer.call({
          method: 'POST',
          path,
          headers: { 'x-operator': this.operator },
          body: {
            floor: formatFencingToken(raise.floor),
            revocationId: raise.revocationId,
            reason: raise.reason,
          },
          budget: HOP_BUDGETS.fencedWrite,
          signal,
        }),
      signal,
    );
    return body.raised === true ? 'raised' : 'unchanged';
  }
}
