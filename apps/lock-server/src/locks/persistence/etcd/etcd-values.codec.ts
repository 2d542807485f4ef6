import type { IKeyValue } from 'etcd3';

/** Values stored by the etcd backend (JSON). Written once per incarnation unless noted. */

/** lock/<key>: never re-put while held, so mod_revision == create_revision == token. */
export interface LockValue {
  ownerId: string;
  sessionId: string;
  acquiredAtMs: number;
}

/** session-lock/<sid>/<key>: re-put by renew (never touches lock/<key>). */
export interface SessionLockValue {
  expiresAtMs: number;
}

/** session/<sid> and session-meta/<sid>. */
export interface SessionValue {
  ownerId: string;
  ttlMillis: number;
  /** Set on session-meta by L3, so a later heartbeat is answered as for an ended session. */
  closed?: boolean;
}

export interface RevocationRecord {
  key: string;
  operator: string;
  reason: string;
  revokedToken: string;
  holderOwnerId: string;
  holderSessionId: string;
  revokedAt: string;
}

export function encode(value: object): Buffer {
  return Buffer.from(JSON.stringify(value));
}

function decode<T>(kv: IKeyValue, check: (v: Record<string, unknown>) => boolean): T {
  const parsed: unknown = JSON.parse(kv.value.toString());
  if (typeof parsed !== 'object' || parsed === null || !check(parsed as Record<string, unknown>)) {
    throw new Error(`corrupt value at etcd key ${kv.key.toString()}`);
  }
  return parsed as T;
}

export const decodeLock = (kv: IKeyValue) =>
  decode<LockValue>(
    kv,
    (v) =>
      typeof v.ownerId === 'string' &&
      typeof v.sessionId === 'string' &&
      typeof v.acquiredAtMs === 'number',
  );

export const decodeSessionLock = (kv: IKeyValue) =>
  decode<SessionLockValue>(kv, (v) => typeof v.expiresAtMs === 'number');

export const decodeSession = (kv: IKeyValue) =>
  decode<SessionValue>(kv, (v) => typeof v.ownerId === 'string' && typeof v.ttlMillis === 'number');
