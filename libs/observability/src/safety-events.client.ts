import type { TokenProvider } from '@dlock/identity';
import { HOP_BUDGETS, JsonPeer, PeerProtocolError, withHopRetries } from '@dlock/http-client';
import type { SafetyEventRecord } from '@dlock/lock-nest';
import type { SafetyEventsResponse } from './safety-events.controller';

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isEvent(v: unknown): v is SafetyEventRecord {
  return (
    isRecord(v) &&
    Number.isSafeInteger(v.seq) &&
    typeof v.at === 'string' &&
    typeof v.event === 'string' &&
    isRecord(v.fields)
  );
}

/**
 * Reads one service's GET /v1/safety-events (docs/operations.md, "Safety
 * event feed"): an advisory read, retried like every other.
 */
export class SafetyEventsClient {
  private readonly hop: JsonPeer;

  constructor(peerName: string, baseUrl: string, token?: TokenProvider) {
    this.hop = new JsonPeer(peerName, baseUrl, { token });
  }

  /** Events after `after` (0 = the oldest kept), at most `limit` (1..500). */
  async after(after: number, limit: number, signal?: AbortSignal): Promise<SafetyEventsResponse> {
    const query = new URLSearchParams({ after: String(after), limit: String(limit) });
    const body = await withHopRetries(
      'advisoryRead',
      () =>
        this.hop.call<unknown>({
          method: 'GET',
          path: `/v1/safety-events?${query.toString()}`,
          budget: HOP_BUDGETS.advisoryRead,
          signal,
        }),
      signal,
    );
    if (
      !isRecord(body) ||
      typeof body.service !== 'string' ||
      !Number.isSafeInteger(body.nextAfter) ||
      !Array.isArray(body.events) ||
      !body.events.every(isEvent)
    ) {
      throw new PeerProtocolError(this.hop.name, 'not a safety event page', 200);
    }
    return body as unknown as SafetyEventsResponse;
  }

  close(): void {
    this.hop.close();
  }
}
