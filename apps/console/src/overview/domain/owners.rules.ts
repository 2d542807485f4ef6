import type { HeldLockDto, LiveSessionDto } from '@dlock/lock-api';

/**
 * One owner's rows of a listing: the page shows a line per owner with its
 * count and its first rows, so one owner with hundreds of rows cannot push
 * the others off the panel (docs/console.md, "The panels").
 */
export interface OwnerGroup<T> {
  ownerId: string;
  count: number;
  rows: T[];
}

/** A held lock as the page gets it: token and session id only for `locks.read-grants`. */
export type LockRow = Omit<HeldLockDto, 'token' | 'sessionId'> & {
  token?: string;
  sessionId?: string;
};

/** A live session as the page gets it: its id only for `locks.read-grants`. */
export type SessionRow = Omit<LiveSessionDto, 'sessionId'> & { sessionId?: string };

/**
 * Rows grouped by owner, owners in name order; within an owner the rows keep
 * the listing's order unless `rank` orders them (first = shown first).
 */
export function groupByOwner<T extends { ownerId: string }>(
  rows: readonly T[],
  rank?: (a: T, b: T) => number,
): OwnerGroup<T>[] {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const group = groups.get(row.ownerId);
    if (group === undefined) groups.set(row.ownerId, [row]);
    else group.push(row);
  }
  return [...groups.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([ownerId, group]) => ({
      ownerId,
      count: group.length,
      rows: rank === undefined ? group : [...group].sort(rank),
    }));
}

/** A lock's row without its token and session id, for a person who may not read grants. */
export function withoutGrant(lock: HeldLockDto): LockRow {
  return { key: lock.key, ownerId: lock.ownerId, leaseRemainingMillis: lock.leaseRemainingMillis };
}

/** A session's row without its id, for a person who may not read grants. */
export function withoutSessionId(session: LiveSessionDto): SessionRow {
  const { sessionId: _hidden, ...rest } = session;
  return rest;
}
