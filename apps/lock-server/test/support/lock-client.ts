import { UUID_PATTERN } from '@dlock/lock-api';
import { http, sleep, type HttpResult } from '@dlock/testing';

/** Tries of a fixture's call that keeps meeting a retry-safe 503 (etcd busy on a loaded machine). */
const FIXTURE_TRIES = 5;

/**
 * Thin L1-L8 calls for tests: no retries, no interpretation. A call on a
 * session acts as the session's owner unless the test names someone else
 * (only the owner may use a session, docs/security.md).
 */
export class LockApi {
  private readonly owners = new Map<string, string>();

  constructor(readonly url: string) {}

  async openSession(ownerId: string, ttlMillis?: number): Promise<HttpResult> {
    const res = await http('POST', `${this.url}/v1/sessions`, {
      body: ttlMillis === undefined ? { ownerId } : { ownerId, ttlMillis },
    });
    if (res.status === 201) this.owners.set(res.body.sessionId as string, ownerId);
    return res;
  }

  /** Who opened `sessionId` through this api ('owner' for a session it did not open). */
  ownerOf(sessionId: string): string {
    return this.owners.get(sessionId) ?? 'owner';
  }

  /**
   * Opens a session for a fixture and returns its id (asserting 201). A retry-safe
   * 503 (etcd busy on a loaded machine) is tried again a few times: a fixture's
   * session is set-up, not the behaviour under test (L1 has its own tests).
   */
  async session(ownerId: string, ttlMillis?: number): Promise<string> {
    const res = await this.fixtureCall(() => this.openSession(ownerId, ttlMillis));
    if (res.status === 201) return res.body.sessionId as string;
    throw new Error(`open session: ${res.status} ${res.text}`);
  }

  /**
   * An acquire a test sets up with (the behaviour under test is elsewhere, a listing say): a
   * retry-safe 503 is tried again a few times, as the SDK does; the last answer is returned.
   */
  acquireForFixture(
    key: string,
    sessionId: string,
    ownerId: string,
    opts: { ttlMillis?: number } = {},
  ): Promise<HttpResult> {
    return this.fixtureCall(() => this.acquire(key, sessionId, ownerId, opts));
  }

  private async fixtureCall(call: () => Promise<HttpResult>): Promise<HttpResult> {
    for (let attempt = 1; ; attempt++) {
      const res = await call();
      if (res.status !== 503 || res.body?.retrySafe !== true || attempt >= FIXTURE_TRIES)
        return res;
      await sleep(Math.min(1_000, Number(res.body.retryAfterMillis ?? 200)));
    }
  }

  heartbeat(sessionId: string, ownerId = this.ownerOf(sessionId)): Promise<HttpResult> {
    return http('POST', `${this.url}/v1/sessions/${sessionId}/heartbeat`, {
      headers: { 'x-owner-id': ownerId },
    });
  }

  closeSession(sessionId: string, ownerId = this.ownerOf(sessionId)): Promise<HttpResult> {
    return http('DELETE', `${this.url}/v1/sessions/${sessionId}`, {
      headers: { 'x-owner-id': ownerId },
    });
  }

  acquire(
    key: string,
    sessionId: string,
    ownerId: string,
    opts: { ttlMillis?: number; waitMillis?: number } = {},
  ): Promise<HttpResult> {
    return http('POST', `${this.url}/v1/locks/${key}/acquire`, {
      headers: { 'x-owner-id': ownerId },
      body: { sessionId, ...opts },
    });
  }

  renew(
    key: string,
    sessionId: string,
    token: string,
    opts: { ttlMillis?: number; ownerId?: string } = {},
  ): Promise<HttpResult> {
    return http('POST', `${this.url}/v1/locks/${key}/renew`, {
      headers: { 'x-owner-id': opts.ownerId ?? this.ownerOf(sessionId), 'x-fencing-token': token },
      body: opts.ttlMillis === undefined ? { sessionId } : { sessionId, ttlMillis: opts.ttlMillis },
    });
  }

  release(
    key: string,
    sessionId: string,
    token: string,
    ownerId = this.ownerOf(sessionId),
  ): Promise<HttpResult> {
    return http('DELETE', `${this.url}/v1/locks/${key}?sessionId=${sessionId}`, {
      headers: { 'x-owner-id': ownerId, 'x-fencing-token': token },
    });
  }

  inspect(key: string): Promise<HttpResult> {
    return http('GET', `${this.url}/v1/locks/${key}`);
  }

  revoke(key: string, body: Record<string, unknown>): Promise<HttpResult> {
    return http('POST', `${this.url}/v1/locks/${key}/revoke`, { body });
  }
}

export const TRACE_ID = expect.stringMatching(/^[0-9a-f]{32}$/);
export const INSTANT = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
export const UUID = expect.stringMatching(UUID_PATTERN);
export const TOKEN = expect.stringMatching(/^[1-9][0-9]{0,18}$/);
/** A grant proof: a compact JWS (docs/security.md, "Signed grants"). */
export const PROOF = expect.stringMatching(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
