import { DlockError, formatFencingToken, parseFencingToken } from '@dlock/lock-api';
import {
  ADVISORY_READ,
  ADVISORY_READ_TRIES,
  FENCED_WRITE,
  HttpPeer,
  readWithRetries,
} from './http-peer';

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
  private readonly peer: HttpPeer;

  constructor(baseUrl: string) {
    this.peer = new HttpPeer('lock-server', baseUrl);
  }

  async list(afterFloor: bigint, limit: number, signal?: AbortSignal): Promise<Revocation[]> {
    const query = new URLSearchParams({ afterFloor: afterFloor.toString(), limit: String(limit) });
    const body = (await readWithRetries(
      ADVISORY_READ_TRIES,
      () =>
        this.peer.send({
          method: 'GET',
          path: `/v1/revocations?${query.toString()}`,
          budget: ADVISORY_READ,
          signal,
        }),
      signal,
    )) as { items?: Record<string, unknown>[] };
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
  private readonly payments: HttpPeer;
  private readonly proxy: HttpPeer;

  constructor(
    paymentResourceUrl: string,
    railProxyUrl: string,
    private readonly operator: string,
  ) {
    this.payments = new HttpPeer('payment-resource', paymentResourceUrl);
    this.proxy = new HttpPeer('rail-proxy', railProxyUrl);
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
    peer: HttpPeer,
    path: string,
    raise: FloorRaise,
    signal?: AbortSignal,
  ): Promise<RaiseResult> {
    const body = (await readWithRetries(
      ADVISORY_READ_TRIES,
      () =>
        peer.send({
          method: 'POST',
          path,
          headers: { 'x-operator': this.operator },
          body: {
            floor: formatFencingToken(raise.floor),
            revocationId: raise.revocationId,
            reason: raise.reason,
          },
          budget: FENCED_WRITE,
          signal,
        }),
      signal,
    )) as { raised?: unknown };
    return body.raised === true ? 'raised' : 'unchanged';
  }
}
