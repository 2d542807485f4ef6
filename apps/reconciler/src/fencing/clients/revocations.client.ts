import type { TokenProvider } from '@dlock/identity';
import { parseFencingToken } from '@dlock/lock-api';
import { HOP_BUDGETS, JsonPeer, withHopRetries } from '@dlock/http-client';

/** One L8 revocation as GET /v1/revocations lists it. */
export interface Revocation {
  revocationId: string;
  key: string;
  revokedToken: bigint;
  newTokenFloor: bigint;
  revokedAt: Date;
  /** The lock-server's signed notice over the floor: what the guards raise on. */
  notice: string;
}

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
      notice: str(item, 'notice'),
    }));
  }
}
