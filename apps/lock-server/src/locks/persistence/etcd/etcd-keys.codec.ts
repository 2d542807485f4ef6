/**
 * The key layout of the etcd backend (docs/lock-server-etcd.md). Lock keys
 * match [a-zA-Z0-9:._-]+ and session ids are uuids, so no segment contains
 * '/' and every prefix below is unambiguous.
 *
 *   lock/<key>               the grant; lease = the lock's own lease; token = its create revision
 *   session-lock/<sid>/<key> index of the session's locks, same lease as the lock; reported expiry
 *   session/<sid>            the live session; lease = the session lease
 *   session-meta/<sid>       tombstone telling SESSION_EXPIRED from SESSION_UNKNOWN, and CLOSED
 *                            (`closed: true`, put by L3) from EXPIRED; retention lease
 *   seen/<key>               L7 answers 404 only for keys never acquired; no lease
 *   revocation/<key>/<id>    L8 audit record; no lease; its mod revision is newTokenFloor
 *   revocation-request/<id>  a two-person revoke's request and approval; no lease
 */
export class EtcdKeys {
  constructor(readonly prefix: string) {}

  lock(key: string): Buffer {
    return Buffer.from(`${this.prefix}lock/${key}`);
  }
  locksPrefix(): Buffer {
    return Buffer.from(`${this.prefix}lock/`);
  }
  seen(key: string): Buffer {
    return Buffer.from(`${this.prefix}seen/${key}`);
  }
  session(sessionId: string): Buffer {
    return Buffer.from(`${this.prefix}session/${sessionId}`);
  }
  sessionsPrefix(): Buffer {
    return Buffer.from(`${this.prefix}session/`);
  }
  sessionIdOf(sessionKey: Buffer): string {
    return sessionKey.toString().slice(`${this.prefix}session/`.length);
  }
  sessionMeta(sessionId: string): Buffer {
    return Buffer.from(`${this.prefix}session-meta/${sessionId}`);
  }
  sessionMetasPrefix(): Buffer {
    return Buffer.from(`${this.prefix}session-meta/`);
  }
  sessionIdOfMeta(metaKey: Buffer): string {
    return metaKey.toString().slice(`${this.prefix}session-meta/`.length);
  }
  sessionLock(sessionId: string, key: string): Buffer {
    return Buffer.from(`${this.prefix}session-lock/${sessionId}/${key}`);
  }
  sessionLocksPrefix(sessionId: string): Buffer {
    return Buffer.from(`${this.prefix}session-lock/${sessionId}/`);
  }
  revocation(key: string, revocationId: string): Buffer {
    return Buffer.from(`${this.prefix}revocation/${key}/${revocationId}`);
  }
  revocationsPrefix(key: string): Buffer {
    return Buffer.from(`${this.prefix}revocation/${key}/`);
  }
  /** Every key's revocation records (GET /v1/revocations). */
  allRevocationsPrefix(): Buffer {
    return Buffer.from(`${this.prefix}revocation/`);
  }
  revocationRequest(requestId: string): Buffer {
    return Buffer.from(`${this.prefix}revocation-request/${requestId}`);
  }
  ping(): Buffer {
    return Buffer.from(`${this.prefix}ping`);
  }
}

/** The end of the range of every key starting with `prefix` (etcd's range_end). */
export function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i] < 0xff) {
      end[i] += 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}
