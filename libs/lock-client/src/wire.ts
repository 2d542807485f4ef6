import {
  errorFromEnvelope,
  formatFencingToken,
  parseFencingToken,
  parseInstant,
  type DlockError,
  GRANT_PROOF_HEADER,
  type FenceCredential,
  type FencingToken,
  type LockGrant,
} from '@dlock/lock-api';
import { isErrorEnvelope, parsePeerJson, stringifyInt64Json } from '@dlock/http-client';
import { ProtocolError } from './errors';
import type { CallBudget } from './options';
import type { Transport } from './transport';

export interface OpenedSessionWire {
  sessionId: string;
  ownerId: string;
  ttlMillis: number;
  expiresAt: Date;
}

export interface HeartbeatWire {
  sessionId: string;
  expiresAt: Date;
  serverTime: Date;
  heldLockCount: number;
}

/** A grant as the lock-server answers it: with its proof (docs/security.md, "Signed grants"). */
export interface ProvenGrant extends LockGrant {
  proof: string;
}

export interface CallOptions {
  budget: CallBudget;
  signal?: AbortSignal;
}

/**
 * The L1–L6 calls as plain functions over a Transport: one request each, no
 * retries, no state. Every response is parsed strictly; every non-2xx becomes
 * the typed error of its envelope. Protected calls (renew L5, release L6)
 * take the token as a required argument — there is nowhere else to get it.
 */
export class LockServerApi {
  constructor(
    private readonly baseUrl: URL,
    private readonly ownerId: string,
    private readonly transport: Transport,
  ) {}

  /** L1 — open a session (docs/lock-server.md#endpoints). */
  async openSession(ttlMillis: number, call: CallOptions): Promise<OpenedSessionWire> {
    const body = await this.send('POST', '/v1/sessions', call, {
      body: { ownerId: this.ownerId, ttlMillis },
      expect: 201,
    });
    return {
      sessionId: str(body, 'sessionId'),
      ownerId: str(body, 'ownerId'),
      ttlMillis: int(body, 'ttlMillis'),
      expiresAt: instant(body, 'expiresAt'),
    };
  }

  /** L2 — keep a session alive (docs/lock-server.md#endpoints). */
  async heartbeat(sessionId: string, call: CallOptions): Promise<HeartbeatWire> {
    const body = await this.send('POST', `/v1/sessions/${seg(sessionId)}/heartbeat`, call, {
      expect: 200,
    });
    return {
      sessionId: str(body, 'sessionId'),
      expiresAt: instant(body, 'expiresAt'),
      serverTime: instant(body, 'serverTime'),
      heldLockCount: int(body, 'heldLockCount'),
    };
  }

  /** L3: releases every lock of the session server-side. */
  async closeSession(sessionId: string, call: CallOptions): Promise<void> {
    await this.send('DELETE', `/v1/sessions/${seg(sessionId)}`, call, { expect: 204 });
  }

  /** L4, one attempt. Contention arrives as a thrown LOCK_CONTENDED DlockError. */
  async acquire(
    key: string,
    request: { sessionId: string; ttlMillis: number; waitMillis: number },
    call: CallOptions,
  ): Promise<ProvenGrant> {
    const body = await this.send('POST', `/v1/locks/${seg(key)}/acquire`, call, {
      body: request,
      expect: 200,
    });
    return grant(body);
  }

  /** L5: the token names the grant being renewed. */
  async renew(
    key: string,
    sessionId: string,
    token: FencingToken,
    ttlMillis: number | undefined,
    call: CallOptions,
  ): Promise<ProvenGrant> {
    const body = await this.send('POST', `/v1/locks/${seg(key)}/renew`, call, {
      body: ttlMillis === undefined ? { sessionId } : { sessionId, ttlMillis },
      token: requireToken(token),
      expect: 200,
    });
    return grant(body);
  }

  /** L6: compare-and-delete on (key, token), by the owner the proof names. */
  async release(
    key: string,
    sessionId: string,
    fence: FenceCredential,
    call: CallOptions,
  ): Promise<void> {
    await this.send('DELETE', `/v1/locks/${seg(key)}`, call, {
      body: { sessionId },
      token: requireToken(fence.token),
      proof: fence.proof,
      expect: 204,
    });
  }

  private async send(
    method: 'POST' | 'DELETE',
    path: string,
    call: CallOptions,
    spec: { body?: unknown; token?: FencingToken; proof?: string; expect: number },
  ): Promise<Record<string, unknown>> {
    const headers: Record<string, string> = {
      accept: 'application/json',
      'x-owner-id': this.ownerId,
    };
    let payload: string | undefined;
    if (spec.body !== undefined) {
      payload = stringifyInt64Json(spec.body);
      headers['content-type'] = 'application/json; charset=utf-8';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    if (spec.token !== undefined) headers['x-fencing-token'] = formatFencingToken(spec.token);
    if (spec.proof !== undefined) headers[GRANT_PROOF_HEADER] = spec.proof;
    const res = await this.transport({
      method,
      url: new URL(path, this.baseUrl),
      headers,
      body: payload,
      connectTimeoutMs: call.budget.connectTimeoutMs,
      readTimeoutMs: call.budget.readTimeoutMs,
      signal: call.signal,
    });
    if (res.status < 200 || res.status > 299) throw errorFromResponse(res.status, res.text);
    if (res.status !== spec.expect)
      throw new ProtocolError(`expected ${spec.expect} from ${method} ${path}`, res.status);
    if (spec.expect === 204) return {};
    return objectBody(res.status, res.text);
  }
}

/** Every non-2xx: the typed error of its contract envelope (docs/contract.md). */
export function errorFromResponse(status: number, text: string): DlockError {
  let parsed: unknown;
  try {
    parsed = parsePeerJson(text);
  } catch {
    return new ProtocolError(`lock-server answered ${status} without a JSON envelope`, status);
  }
  if (!isErrorEnvelope(parsed))
    return new ProtocolError(`lock-server answered ${status} with a malformed envelope`, status);
  return errorFromEnvelope(parsed, status);
}

function objectBody(status: number, text: string): Record<string, unknown> {
  try {
    const parsed: unknown = parsePeerJson(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch (err) {
    throw new ProtocolError('lock-server answered malformed JSON', status, err);
  }
  throw new ProtocolError('lock-server answered a non-object body', status);
}

/**
 * The token field goes through the strict parser: a decimal string per the
 * contract; a JSON number only if it is a safe integer. A larger number
 * (read exactly, as a bigint) is still off-contract and refused.
 */
function grant(body: Record<string, unknown>): ProvenGrant {
  let fencingToken: FencingToken;
  try {
    if (typeof body.fencingToken === 'bigint') throw new TypeError('a JSON number above 2^53');
    fencingToken = parseFencingToken(body.fencingToken, 'fencingToken');
  } catch (err) {
    throw new ProtocolError('lock-server answered an unusable fencingToken', 200, err);
  }
  return {
    key: str(body, 'key'),
    ownerId: str(body, 'ownerId'),
    sessionId: str(body, 'sessionId'),
    fencingToken,
    acquiredAt: instant(body, 'acquiredAt'),
    expiresAt: instant(body, 'expiresAt'),
    proof: str(body, 'grantProof'),
  };
}

function requireToken(token: FencingToken): FencingToken {
  // A protected call without a real token must be impossible, not merely unlikely.
  if (typeof token !== 'bigint' || token < 1n)
    throw new TypeError('a protected lock-server call needs an explicit fencing token');
  return token;
}

function seg(value: string): string {
  return encodeURIComponent(value);
}

function str(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== 'string' || value === '')
    throw new ProtocolError(`response field ${field} is not a string`, 200);
  return value;
}

function int(body: Record<string, unknown>, field: string): number {
  const value = body[field];
  if (!Number.isSafeInteger(value) || (value as number) < 0)
    throw new ProtocolError(`response field ${field} is not a non-negative integer`, 200);
  return value as number;
}

function instant(body: Record<string, unknown>, field: string): Date {
  const value = body[field];
  try {
    return parseInstant(String(value));
  } catch (err) {
    throw new ProtocolError(`response field ${field} is not an RFC 3339 ms instant`, 200, err);
  }
}
