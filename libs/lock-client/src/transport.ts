import {
  HttpTransport,
  IDLE_SOCKET_MS,
  type HeaderProvider,
  type HttpRequest,
  type HttpResponse,
  type Transport,
  withBearerToken,
  withHeaders,
} from '@dlock/http-client';
import { LockServerUnavailableError } from './errors';

/** The SDK's seam: one exchange, no retries (retry-policy.ts and the heartbeat round retry). */
export type { HeaderProvider, Transport };
export type WireRequest = HttpRequest;
export type WireResponse = HttpResponse;
export { IDLE_SOCKET_MS, withBearerToken, withHeaders };

/** Every lock-server answer of the contract is far below this. */
const RESPONSE_BYTES_MAX = 64 * 1024;

/**
 * The shared outbound transport (@dlock/http-client, docs/lock-client.md
 * "Timing, budgets and retries"), failing with the SDK's public
 * LockServerUnavailableError so callers' `instanceof` and `phase` keep working.
 */
export function nodeHttpTransport(): Transport {
  return new HttpTransport({
    peer: 'lock-server',
    responseBytesMax: RESPONSE_BYTES_MAX,
    unavailable: (_peer, phase, message, cause) =>
      new LockServerUnavailableError(phase, message, cause),
  }).send;
}
