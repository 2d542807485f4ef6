import type { TokenProvider } from '@dlock/identity';
import { HOP_BUDGETS, JsonPeer, PeerProtocolError, withHopRetries } from '@dlock/http-client';
import {
  formatFencingToken,
  parseFencingToken,
  type HeldLockDto,
  type LiveSessionDto,
  type LockListDto,
  type SessionListDto,
} from '@dlock/lock-api';

type Fields = Record<string, unknown>;

function isObject(v: unknown): v is Fields {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The lock-server's advisory listings (docs/lock-server.md, "Listings") for
 * the operator console: GET /v1/locks and GET /v1/sessions. Nothing read
 * here may decide a write (FR-07); only the fenced write does.
 */
export class LockServerReadClient {
  private readonly hop: JsonPeer;

  constructor(baseUrl: string, token?: TokenProvider) {
    this.hop = new JsonPeer('lock-server', baseUrl, { token });
  }

  /** Held locks by key, at most `limit` (1..500). */
  async locks(limit: number, signal?: AbortSignal): Promise<LockListDto> {
    const body = await this.get(`/v1/locks?limit=${limit}`, signal);
    const locks = this.list(body, 'locks').map((l): HeldLockDto => {
      const token = this.token(l.token);
      if (
        typeof l.key !== 'string' ||
        typeof l.ownerId !== 'string' ||
        typeof l.sessionId !== 'string' ||
        !Number.isSafeInteger(l.leaseRemainingMillis)
      ) {
        throw this.bad('a lock entry');
      }
      return {
        key: l.key,
        ownerId: l.ownerId,
        sessionId: l.sessionId,
        token,
        leaseRemainingMillis: l.leaseRemainingMillis as number,
      };
    });
    return { locks, truncated: body.truncated as boolean };
  }

  /** Live sessions by id, at most `limit` (1..500). */
  async sessions(limit: number, signal?: AbortSignal): Promise<SessionListDto> {
    const body = await this.get(`/v1/sessions?limit=${limit}`, signal);
    const sessions = this.list(body, 'sessions').map((s): LiveSessionDto => {
      if (
        typeof s.sessionId !== 'string' ||
        typeof s.ownerId !== 'string' ||
        (s.state !== 'ACTIVE' && s.state !== 'SUSPECT') ||
        !Number.isSafeInteger(s.ttlMillis) ||
        !Number.isSafeInteger(s.ttlRemainingMillis) ||
        !Number.isSafeInteger(s.locksHeld)
      ) {
        throw this.bad('a session entry');
      }
      return {
        sessionId: s.sessionId,
        ownerId: s.ownerId,
        state: s.state,
        ttlMillis: s.ttlMillis as number,
        ttlRemainingMillis: s.ttlRemainingMillis as number,
        locksHeld: s.locksHeld as number,
      };
    });
    return { sessions, truncated: body.truncated as boolean };
  }

  close(): void {
    this.hop.close();
  }

  private async get(path: string, signal?: AbortSignal): Promise<Fields> {
    const body = await withHopRetries(
      'advisoryRead',
      () =>
        this.hop.call<unknown>({ method: 'GET', path, budget: HOP_BUDGETS.advisoryRead, signal }),
      signal,
    );
    if (!isObject(body) || typeof body.truncated !== 'boolean') throw this.bad('a listing');
    return body;
  }

  private list(body: Fields, field: string): Fields[] {
    const items = body[field];
    if (!Array.isArray(items) || !items.every(isObject)) throw this.bad(`a ${field} array`);
    return items;
  }

  private token(v: unknown): string {
    try {
      return formatFencingToken(parseFencingToken(v, 'token'));
    } catch (err) {
      throw new PeerProtocolError(this.hop.name, 'token is not a fencing token', 200, err);
    }
  }

  private bad(what: string): PeerProtocolError {
    return new PeerProtocolError(this.hop.name, `the answer is not ${what}`, 200);
  }
}
