import { Injectable } from '@nestjs/common';
import { DlockError } from '@dlock/lock-api';
import type { LockListDto, SessionListDto } from '@dlock/lock-api';
import type { PayoutPage, PayoutStats, SubmissionsResponse } from '@dlock/payout-contract';
import { ConsolePeers, type ServiceName } from '../../console-peers';
import { joinFences, type FenceRow } from '../domain/fences';
import { describeFailure } from '../../failures';
import {
  PendingRevocations,
  type RevocationRequestAnswer,
} from '../../actions/service/revocation-requests';

/** A panel's data, or why its service could not give it (the page shows that instead). */
export type Section<T> = { ok: true; data: T } | { ok: false; service: string; error: string };

/** Rows asked for per list: the overview is one screen. */
const LOCKS_MAX = 50;
const SESSIONS_MAX = 50;
const ACCOUNTS_MAX = 200;
const AMBIGUOUS_MAX = 20;
/** Chart window: the last five minutes. */
const STATS_WINDOW_SECONDS = 300;

export interface AmbiguousItem {
  payout: PayoutPage['items'][number];
  /** The rail-proxy's record of each submission of this payout. */
  evidence: Section<SubmissionsResponse['submissions']>;
}

export interface Overview {
  at: string;
  stats: Section<PayoutStats>;
  locks: Section<LockListDto>;
  sessions: Section<SessionListDto>;
  fences: Section<{ rows: FenceRow[]; truncated: boolean; highWaterError?: string }>;
  ambiguous: Section<{ items: AmbiguousItem[]; more: boolean }>;
  /** Two-person revokes asked for through this console, waiting for a second person. */
  revocationRequests: RevocationRequestAnswer[];
}

/** Everything the overview shows, read from the services in parallel, each part on its own. */
@Injectable()
export class OverviewService {
  constructor(
    private readonly peers: ConsolePeers,
    private readonly pending: PendingRevocations,
  ) {}

  async overview(): Promise<Overview> {
    const [stats, locks, sessions, fences, ambiguous] = await Promise.all([
      this.section('payment-resource', (s) => this.peers.payments.stats(STATS_WINDOW_SECONDS, s)),
      this.section('lock-server', (s) => this.peers.lockReads.locks(LOCKS_MAX, s)),
      this.section('lock-server', (s) => this.peers.lockReads.sessions(SESSIONS_MAX, s)),
      this.section('payment-resource', (s) => this.fences(s)),
      this.section('payment-resource', (s) => this.ambiguous(s)),
    ]);
    return {
      at: new Date().toISOString(),
      stats,
      locks,
      sessions,
      fences,
      ambiguous,
      revocationRequests: this.pending.list(),
    };
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

  /** Every read of one refresh ends by then, whatever it waits on. */
  private deadline(): AbortSignal {
    return AbortSignal.timeout(this.peers.budget.readTimeoutMs * 2);
  }

  /** payment-resource's fences next to rail-proxy's marks; the proxy being down leaves its column empty. */
  private async fences(signal: AbortSignal) {
    const [accounts, highWater] = await Promise.all([
      this.peers.payments.accounts(ACCOUNTS_MAX, signal),
      this.section('rail-proxy', (s) => this.peers.rail.highWater(ACCOUNTS_MAX, s)),
    ]);
    return {
      rows: joinFences(accounts.accounts, highWater.ok ? highWater.data.accounts : []),
      truncated: accounts.truncated || (highWater.ok && highWater.data.truncated),
      ...(highWater.ok ? {} : { highWaterError: highWater.error }),
    };
  }

  private async ambiguous(signal: AbortSignal) {
    const page = await this.peers.get<PayoutPage>(
      'payment-resource',
      `/v1/payouts?state=RAIL_AMBIGUOUS&limit=${AMBIGUOUS_MAX}`,
      signal,
    );
    const items = await Promise.all(
      page.items.map(async (payout) => ({
        payout,
        evidence: await this.section('rail-proxy', (s) => this.evidence(payout.payoutId, s)),
      })),
    );
    return { items, more: page.nextCursor !== undefined };
  }

  /** The proxy's submissions of a payout; none recorded is evidence too (an empty list). */
  private async evidence(payoutId: string, signal: AbortSignal) {
    try {
      const res = await this.peers.get<SubmissionsResponse>(
        'rail-proxy',
        `/v1/rail/submissions/${encodeURIComponent(payoutId)}`,
        signal,
      );
      return res.submissions;
    } catch (err) {
      if (err instanceof DlockError && err.code === 'NOT_FOUND') return [];
      throw err;
    }
  }
}
