import { Injectable } from '@nestjs/common';
import type { OperationName } from '@dlock/identity';
import { DlockError } from '@dlock/lock-api';
import type { PayoutPage, PayoutStats, SubmissionsResponse } from '@dlock/payout-contract';
import { ConsolePeers, type ServiceName } from '../../console-peers.client';
import { PersonRights } from '../../sessions/service/person-rights.service';
import { joinFences, type FenceRow } from '../domain/fences.rules';
import {
  groupByOwner,
  withoutGrant,
  withoutSessionId,
  type LockRow,
  type OwnerGroup,
  type SessionRow,
} from '../domain/owners.rules';
import { describeFailure } from '../../failure.errors';
import {
  PendingRevocations,
  type RevocationRequestAnswer,
} from '../../actions/service/revocation-requests.service';

/**
 * A panel's data, or why its service could not give it, or the operation the
 * person's roles lack to see it (the page shows that instead).
 */
export type Section<T> =
  { ok: true; data: T } | { ok: false; service: string; error: string; denied?: OperationName };

/**
 * Locks and sessions asked for: the listings' most, so every owner is seen
 * and the page groups them by owner (docs/console.md, "The panels").
 */
const LOCKS_MAX = 500;
const SESSIONS_MAX = 500;
const ACCOUNTS_MAX = 200;
const AMBIGUOUS_MAX = 20;
/** Chart window: the last five minutes. */
const STATS_WINDOW_SECONDS = 300;

type Submission = SubmissionsResponse['submissions'][number];

export interface AmbiguousItem {
  payout: PayoutPage['items'][number];
  /** The rail-proxy's record of each submission of this payout (its token: read-grants only). */
  evidence: Section<(Omit<Submission, 'presentedToken'> & { presentedToken?: string })[]>;
}

/** A listing grouped by owner; `grantsShown` says whether tokens and session ids are in it. */
export interface ByOwner<T> {
  owners: OwnerGroup<T>[];
  count: number;
  truncated: boolean;
  grantsShown: boolean;
}

export interface Overview {
  at: string;
  stats: Section<PayoutStats>;
  locks: Section<ByOwner<LockRow>>;
  sessions: Section<ByOwner<SessionRow>>;
  fences: Section<{ rows: FenceRow[]; truncated: boolean; highWaterError?: string }>;
  ambiguous: Section<{ items: AmbiguousItem[]; more: boolean }>;
  /** Two-person revokes asked for through this console, waiting for a second person. */
  revocationRequests: RevocationRequestAnswer[];
}

/**
 * Everything the overview shows, read from the services in parallel, each
 * part on its own. The console reads as itself; what it passes on is what
 * the person's own roles let them read (docs/console.md, "What a person sees").
 */
@Injectable()
export class OverviewService {
  constructor(
    private readonly peers: ConsolePeers,
    private readonly pending: PendingRevocations,
    private readonly rights: PersonRights,
  ) {}

  async overview(subject: string): Promise<Overview> {
    const may = (op: OperationName) => this.rights.may(subject, op);
    const grants = may('locks.read-grants');
    const [stats, locks, sessions, fences, ambiguous] = await Promise.all([
      this.granted(may, 'payouts.stats', 'payment-resource', (s) =>
        this.peers.payments.stats(STATS_WINDOW_SECONDS, s),
      ),
      this.granted(may, 'locks.list', 'lock-server', (s) => this.locks(grants, s)),
      this.granted(may, 'sessions.list', 'lock-server', (s) => this.sessions(grants, s)),
      this.granted(may, 'accounts.list', 'payment-resource', (s) =>
        this.fences(may('high-water.list'), s),
      ),
      this.granted(may, 'payouts.list', 'payment-resource', (s) =>
        this.ambiguous(may('rail.read'), grants, s),
      ),
    ]);
    return {
      at: new Date().toISOString(),
      stats,
      locks,
      sessions,
      fences,
      ambiguous,
      revocationRequests: may('revocations.list') ? this.pending.list() : [],
    };
  }

  /** The section when the person's roles grant `operation`; else not read at all. */
  private granted<T>(
    may: (op: OperationName) => boolean,
    operation: OperationName,
    service: ServiceName,
    read: (signal: AbortSignal) => Promise<T>,
  ): Promise<Section<T>> {
    if (may(operation)) return this.section(service, read);
    return Promise.resolve(denied(operation));
  }

  private async section<T>(
    service: ServiceName,
    read: (signal: AbortSignal) => Promise<T>,
  ): Promise<Section<T>> {
    try {
      return { ok: true, data: await read(this.deadline()) };
    } catch (err) {
      return { ok: false, service, error: describeFailure(err) };
    }
  }

  private async locks(grants: boolean, signal: AbortSignal): Promise<ByOwner<LockRow>> {
    const { locks, truncated } = await this.peers.lockReads.locks(LOCKS_MAX, signal);
    const rows: LockRow[] = grants ? locks : locks.map(withoutGrant);
    return { owners: groupByOwner(rows), count: rows.length, truncated, grantsShown: grants };
  }

  /** Sessions by owner, the ones holding the most locks first. */
  private async sessions(grants: boolean, signal: AbortSignal): Promise<ByOwner<SessionRow>> {
    const { sessions, truncated } = await this.peers.lockReads.sessions(SESSIONS_MAX, signal);
    const rows: SessionRow[] = grants ? sessions : sessions.map(withoutSessionId);
    const owners = groupByOwner(rows, (a, b) => b.locksHeld - a.locksHeld);
    return { owners, count: rows.length, truncated, grantsShown: grants };
  }

  /** Every read of one refresh ends by then, whatever it waits on. */
  private deadline(): AbortSignal {
    return AbortSignal.timeout(this.peers.budget.readTimeoutMs * 2);
  }

  /** payment-resource's fences next to rail-proxy's marks; the proxy being down leaves its column empty. */
  private async fences(highWaterGranted: boolean, signal: AbortSignal) {
    const [accounts, highWater] = await Promise.all([
      this.peers.payments.accounts(ACCOUNTS_MAX, signal),
      highWaterGranted
        ? this.section('rail-proxy', (s) => this.peers.rail.highWater(ACCOUNTS_MAX, s))
        : denied('high-water.list'),
    ]);
    return {
      rows: joinFences(accounts.accounts, highWater.ok ? highWater.data.accounts : []),
      truncated: accounts.truncated || (highWater.ok && highWater.data.truncated),
      ...(highWater.ok ? {} : { highWaterError: highWater.error }),
    };
  }

  private async ambiguous(railGranted: boolean, grants: boolean, signal: AbortSignal) {
    const page = await this.peers.get<PayoutPage>(
      'payment-resource',
      `/v1/payouts?state=RAIL_AMBIGUOUS&limit=${AMBIGUOUS_MAX}`,
      signal,
    );
    const items = await Promise.all(
      page.items.map(async (payout) => ({
        payout,
        evidence: railGranted
          ? await this.section('rail-proxy', (s) => this.evidence(payout.payoutId, grants, s))
          : denied('rail.read'),
      })),
    );
    return { items, more: page.nextCursor !== undefined };
  }

  /**
   * The proxy's submissions of a payout; none recorded is evidence too (an
   * empty list). The token a submission presented is a grant's: only for
   * `locks.read-grants`.
   */
  private async evidence(payoutId: string, grants: boolean, signal: AbortSignal) {
    try {
      const res = await this.peers.get<SubmissionsResponse>(
        'rail-proxy',
        `/v1/rail/submissions/${encodeURIComponent(payoutId)}`,
        signal,
      );
      return grants
        ? res.submissions
        : res.submissions.map(({ presentedToken: _hidden, ...rest }) => rest);
    } catch (err) {
      if (err instanceof DlockError && err.code === 'NOT_FOUND') return [];
      throw err;
    }
  }
}

/** A section the person's roles do not let them see (nothing was read for it). */
function denied(operation: OperationName): Section<never> {
  return {
    ok: false,
    service: 'console',
    error: `FORBIDDEN: your roles do not grant ${operation}`,
    denied: operation,
  };
}
