import type { LockCall } from '../../infra/lock-recorder.infra';

/** The lock-server calls the model knows (L1–L8, docs/lock-server.md). */
export type LockOpKind =
  'open' | 'heartbeat' | 'close' | 'acquire' | 'renew' | 'release' | 'inspect' | 'revoke';

/**
 * What a call answered, reduced to what the model needs. `unknown` is an
 * indeterminate call: the answer was lost or was a 5xx, so the call may or
 * may not have taken effect, at any time after it was sent.
 */
export type LockAnswer =
  | { type: 'unknown' }
  /** acquire / renew 200 */
  | { type: 'granted'; token: bigint; owner: string; session: string; leaseMs: number }
  | { type: 'contended' }
  | { type: 'lock-lost' }
  | { type: 'session-expired' }
  | { type: 'session-unknown' }
  /** open 201, heartbeat 200 (with the session TTL when known), release / close 204 */
  | { type: 'done'; ttlMs?: number }
  | { type: 'held'; owner: string; token: bigint | null }
  | { type: 'free' }
  | { type: 'never-seen' }
  | { type: 'revoked'; revokedToken: bigint; floor: bigint }
  | { type: 'not-held' }
  | { type: 'fenced-out' };

/** One call as the checker sees it: invocation, completion, input and answer. */
export interface LockOp {
  /** The recorder's sequence number (or a test's index): how an explanation names the call. */
  seq: number;
  kind: LockOpKind;
  key: string | null;
  owner: string | null;
  session: string | null;
  /** The token presented (renew, release) or expected (revoke), if any. */
  token: bigint | null;
  /** The lease TTL asked for on acquire, if any. */
  ttlMs: number | null;
  /** The server-side wait asked for on acquire (waitMillis), if any. */
  waitMs?: number;
  callAt: number;
  /** Infinity for an indeterminate call: it may take effect at any time after callAt. */
  returnAt: number;
  answer: LockAnswer;
  /**
   * Set by the checker on an indeterminate call: the search places it at its
   * send time, where it only registers an effect the model may apply at any
   * later moment (see LockKeyModel).
   */
  deferred?: boolean;
}

/** A call whose answer never came (or was a 5xx): it may take effect at any time after it was sent. */
export function isIndeterminate(op: LockOp): boolean {
  return op.deferred === true || op.returnAt === Infinity;
}

/** A call whose answer the checker knows (not indeterminate, not forgotten by the shrink). */
export function isDefinite(op: LockOp): boolean {
  return op.answer.type !== 'unknown';
}

/**
 * The search never sees an infinite return: an indeterminate call becomes an
 * instant at its send time that registers a pending effect (Porcupine would
 * let it complete at +infinity, which makes the search try every later
 * position for it). Same set of allowed behaviours, far fewer orders.
 */
export function deferIndeterminate(ops: readonly LockOp[]): LockOp[] {
  return ops.map((op) =>
    isIndeterminate(op) ? { ...op, returnAt: op.callAt, deferred: true } : op,
  );
}

/**
 * An unknown answer to these can only have refreshed a lease or a session,
 * which only postpones an expiry the model never forces, or read something:
 * the call constrains nothing and is dropped.
 */
export function isNoOpWhenUnknown(kind: LockOpKind): boolean {
  return kind === 'open' || kind === 'heartbeat' || kind === 'renew' || kind === 'inspect';
}

export interface ConvertedHistory {
  ops: LockOp[];
  /** Calls that carry no information (refused before any effect: 400, 403, 429 ...). */
  ignored: number;
  /** 2xx answers the checker could not read; taken as unknown. */
  unreadable: number;
}

type Route = { kind: LockOpKind; key: string | null; session: string | null };

function routeOf(method: string, url: string): Route | null {
  const path = new URL(url, 'http://x').pathname;
  const parts = path.split('/').map((p) => decodeURIComponent(p));
  // ['', 'v1', 'sessions' | 'locks', id?, action?]
  const [, v, area, id, action] = parts;
  if (v !== 'v1' || parts.length > 5) return null;
  if (area === 'sessions') {
    const session = id ? id.toLowerCase() : null;
    if (method === 'POST' && parts.length === 3) return { kind: 'open', key: null, session };
    if (method === 'POST' && action === 'heartbeat')
      return { kind: 'heartbeat', key: null, session };
    if (method === 'DELETE' && parts.length === 4) return { kind: 'close', key: null, session };
    return null;
  }
  if (area !== 'locks' || !id) return null;
  if (parts.length === 4 && method === 'DELETE') return { kind: 'release', key: id, session: null };
  if (parts.length === 4 && method === 'GET') return { kind: 'inspect', key: id, session: null };
  if (method !== 'POST') return null;
  if (action === 'acquire' || action === 'renew' || action === 'revoke') {
    return { kind: action, key: id, session: null };
  }
  return null;
}

function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' ? (v as Record<string, unknown>) : {};
}

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

/** A token as the wire carries it: a decimal string, or a JSON integer small enough to be exact. */
export function tokenOf(v: unknown): bigint | null {
  if (typeof v === 'string' && /^\d{1,19}$/.test(v)) return BigInt(v);
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  return null;
}

function spanMs(from: unknown, to: unknown): number | null {
  const a = typeof from === 'string' ? Date.parse(from) : NaN;
  const b = typeof to === 'string' ? Date.parse(to) : NaN;
  return Number.isFinite(a) && Number.isFinite(b) && b >= a ? b - a : null;
}

/** The answer of a 2xx; null when the body cannot be read. */
function successAnswer(kind: LockOpKind, status: number, body: Record<string, unknown>) {
  switch (kind) {
    case 'open':
    case 'heartbeat': {
      const ttlMs =
        kind === 'open'
          ? typeof body.ttlMillis === 'number'
            ? body.ttlMillis
            : null
          : spanMs(body.serverTime, body.expiresAt);
      return { type: 'done', ...(ttlMs !== null ? { ttlMs } : {}) } as LockAnswer;
    }
    case 'close':
    case 'release':
      return status === 204 ? ({ type: 'done' } as LockAnswer) : null;
    case 'acquire':
    case 'renew': {
      const token = tokenOf(body.fencingToken);
      const owner = str(body.ownerId);
      const session = str(body.sessionId)?.toLowerCase() ?? null;
      const leaseMs = spanMs(body.acquiredAt, body.expiresAt);
      if (token === null || owner === null || session === null || leaseMs === null) return null;
      return { type: 'granted', token, owner, session, leaseMs } as LockAnswer;
    }
    case 'inspect': {
      if (body.held === false) return { type: 'free' } as LockAnswer;
      const owner = str(body.ownerId);
      if (body.held !== true || owner === null) return null;
      return { type: 'held', owner, token: tokenOf(body.fencingToken) } as LockAnswer;
    }
    case 'revoke': {
      // 202: a two-person request was filed; nothing changed yet.
      if (status === 202) return { type: 'unknown' } as LockAnswer;
      const revokedToken = tokenOf(body.revokedToken);
      const floor = tokenOf(body.newTokenFloor);
      if (revokedToken === null || floor === null) return null;
      return { type: 'revoked', revokedToken, floor } as LockAnswer;
    }
  }
}

/** The refusals that say something about the lock's state (docs/lock-server.md, error columns). */
function refusalAnswer(kind: LockOpKind, code: string | null): LockAnswer | null {
  switch (code) {
    case 'LOCK_CONTENDED':
      return kind === 'acquire' ? { type: 'contended' } : null;
    case 'LOCK_LOST':
      return kind === 'renew' || kind === 'release' ? { type: 'lock-lost' } : null;
    case 'SESSION_EXPIRED':
      return { type: 'session-expired' };
    case 'SESSION_UNKNOWN':
      return { type: 'session-unknown' };
    case 'NOT_FOUND':
      if (kind === 'inspect') return { type: 'never-seen' };
      return kind === 'revoke' ? { type: 'not-held' } : null;
    case 'FENCED_OUT':
      return kind === 'revoke' ? { type: 'fenced-out' } : null;
    default:
      return null;
  }
}

/** The fields of a call that depend on its route: who, which session, what token, what TTL. */
function inputsOf(call: LockCall, route: Route) {
  const body = obj(call.request);
  const session =
    route.kind === 'acquire' || route.kind === 'renew'
      ? (str(body.sessionId)?.toLowerCase() ?? null)
      : route.session;
  const token =
    route.kind === 'revoke'
      ? tokenOf(body.expectedToken)
      : route.kind === 'renew' || route.kind === 'release'
        ? tokenOf(call.fencingToken)
        : null;
  const ttlMs =
    route.kind === 'acquire' && typeof body.ttlMillis === 'number' ? body.ttlMillis : null;
  const waitMs =
    route.kind === 'acquire' && typeof body.waitMillis === 'number' ? body.waitMillis : undefined;
  const owner = call.ownerId ?? str(body.ownerId);
  return { session, token, ttlMs, owner, ...(waitMs !== undefined ? { waitMs } : {}) };
}

/**
 * The recorded calls as model operations. A lost, pending or 5xx call is
 * indeterminate (returnAt = Infinity); a refusal that says nothing about the
 * lock (bad input, authorisation, rate limit) is ignored.
 */
export function toLockOps(calls: readonly LockCall[]): ConvertedHistory {
  const ops: LockOp[] = [];
  let ignored = 0;
  let unreadable = 0;
  for (const call of calls) {
    const route = routeOf(call.method, call.url);
    if (!route) {
      ignored++;
      continue;
    }
    const inputs = inputsOf(call, route);
    const status = call.status ?? 0;
    const answered = call.outcome === 'answered' && status < 500 && call.responseAt !== null;
    let answer: LockAnswer | null = { type: 'unknown' };
    if (answered && status >= 200 && status < 300) {
      answer = successAnswer(route.kind, status, obj(call.response));
      if (!answer) unreadable++;
      answer ??= { type: 'unknown' };
    } else if (answered) {
      answer = refusalAnswer(route.kind, str(obj(call.response).code));
    }
    if (!answer) {
      ignored++;
      continue;
    }
    const session =
      route.kind === 'open' ? (str(obj(call.response).sessionId)?.toLowerCase() ?? null) : null;
    const op: LockOp = {
      seq: call.seq,
      kind: route.kind,
      key: route.key,
      ...inputs,
      session: session ?? inputs.session,
      callAt: call.requestAt,
      returnAt: answer.type === 'unknown' ? Infinity : (call.responseAt ?? Infinity),
      answer,
    };
    if (op.answer.type === 'unknown' && isNoOpWhenUnknown(op.kind)) {
      ignored++;
      continue;
    }
    ops.push(op);
  }
  return { ops, ignored, unreadable };
}
