/** A two-person force-revoke asked for through this console: the lock-server's 202, as it came. */
export interface RevocationRequestAnswer {
  requestId: string;
  key: string;
  status: 'PENDING_APPROVAL';
  operator: string;
  reason: string;
  requestedBy: string;
  requestedAt: string;
  expiresAt: string;
}

/** Requests shown at once; the oldest goes first when more arrive. */
export const PENDING_REQUESTS_MAX = 100;

/**
 * The revocation requests filed through this console and not yet approved,
 * for the page's "Waiting for a second operator" list (docs/console.md). The
 * lock-server keeps the requests themselves and decides every approval; this
 * is only what the page offers to approve, dropped at its window's end. A
 * request filed elsewhere is approved by its id.
 */
export class PendingRevocations {
  private readonly byId = new Map<string, RevocationRequestAnswer>();

  constructor(
    private readonly max = PENDING_REQUESTS_MAX,
    private readonly now: () => number = Date.now,
  ) {}

  add(request: RevocationRequestAnswer): void {
    this.byId.delete(request.requestId);
    this.byId.set(request.requestId, request);
    for (const id of this.byId.keys()) {
      if (this.byId.size <= this.max) break;
      this.byId.delete(id);
    }
  }

  get(requestId: string): RevocationRequestAnswer | undefined {
    return this.byId.get(requestId);
  }

  remove(requestId: string): void {
    this.byId.delete(requestId);
  }

  /** Still approvable (the window open), newest first. */
  list(): RevocationRequestAnswer[] {
    const now = this.now();
    for (const [id, r] of this.byId) if (Date.parse(r.expiresAt) <= now) this.byId.delete(id);
    return [...this.byId.values()].reverse();
  }
}

/** The lock-server answered a revoke with a request (202), not with the revoke itself. */
export function isRevocationRequest(answer: unknown): answer is RevocationRequestAnswer {
  const a = answer as Partial<RevocationRequestAnswer> | undefined;
  return (
    a?.status === 'PENDING_APPROVAL' &&
    typeof a.requestId === 'string' &&
    typeof a.key === 'string' &&
    typeof a.expiresAt === 'string' &&
    typeof a.requestedBy === 'string'
  );
}
