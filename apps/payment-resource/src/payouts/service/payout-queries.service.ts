import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DlockError, formatFencingToken } from '@dlock/lock-api';
import {
  PAYOUT_STATES,
  type AccountList,
  type AccountView,
  PayoutDetail,
  PayoutPage,
  PayoutRecord,
  PayoutState,
  PayoutStats,
} from '@dlock/payout-contract';
import { AccountRepository } from '../../ledger/persistence/account.repository';
import { LedgerRepository } from '../../ledger/persistence/ledger.repository';
import { PayoutRepository, type Payout } from '../persistence/payout.repository';
import { TransitionLogRepository } from '../persistence/transition-log.repository';
import { encodeCursor, type Cursor } from '../domain/cursor.codec';

const RAIL_OUTCOME_OF: Record<string, string> = {
  RAIL_SUBMITTED: 'SUBMITTED',
  RAIL_ACKED: 'ACKED',
  RAIL_REJECTED: 'REJECTED',
  RAIL_AMBIGUOUS: 'AMBIGUOUS',
  RESOLVE_ACKED: 'RESOLVED_ACKED',
  RESOLVE_NOT_FOUND: 'RESOLVED_NOT_FOUND',
};

/** GET /v1/payouts/stats counts posted payouts per this many seconds. */
export const STATS_BUCKET_SECONDS = 10;

function iso(d: Date | null): string | null {
  return d === null ? null : d.toISOString();
}

/** P1, P4, P5: advisory reads (FR-07). Nothing here decides whether a write is safe. */
@Injectable()
export class PayoutQueries {
  constructor(
    private readonly dataSource: DataSource,
    private readonly payouts: PayoutRepository,
    private readonly accounts: AccountRepository,
    private readonly ledger: LedgerRepository,
    private readonly log: TransitionLogRepository,
  ) {}

  async list(filter: {
    state: PayoutState;
    accountId?: string;
    limit: number;
    after?: Cursor;
  }): Promise<PayoutPage> {
    const rows = await this.payouts.list(this.dataSource, {
      ...filter,
      limit: filter.limit + 1,
    });
    const page = rows.slice(0, filter.limit);
    const last = page[page.length - 1];
    const body: PayoutPage = {
      items: page.map((p) => ({
        payoutId: p.payoutId,
        accountId: p.accountId,
        amountMinor: p.amountMinor,
        currency: p.currency,
        beneficiaryRef: p.beneficiaryRef,
        state: p.state,
        attemptCount: p.attemptCount,
        createdAt: p.createdAt.toISOString(),
      })),
    };
    if (rows.length > filter.limit && last) {
      body.nextCursor = encodeCursor({ createdAt: last.createdAt, payoutId: last.payoutId });
    }
    return body;
  }

  async get(payoutId: string): Promise<PayoutDetail> {
    const manager = this.dataSource;
    const payout = await this.payouts.find(manager, payoutId);
    if (!payout) throw new DlockError('NOT_FOUND', 'no such payout', { details: { payoutId } });
    const records = await this.log.railRecords(manager, payoutId);
    return {
      ...this.payoutBody(payout),
      submissions: records.map((r) => ({
        submissionId: r.submissionId,
        outcome: RAIL_OUTCOME_OF[r.event],
        railReference: r.railReference,
        fencingToken: r.token === null ? null : formatFencingToken(r.token),
        ownerId: r.actor,
        recordedAt: r.recordedAt.toISOString(),
      })),
    };
  }

  async account(accountId: string): Promise<AccountView> {
    // One snapshot for both numbers, so a concurrent posting cannot make them disagree.
    return this.dataSource.transaction('REPEATABLE READ', async (tx) => {
      const account = await this.accounts.find(tx, accountId);
      if (!account)
        throw new DlockError('NOT_FOUND', 'no such account', { details: { accountId } });
      const ledgerSumMinor = await this.ledger.sumFor(tx, accountId);
      return {
        accountId: account.accountId,
        kind: account.kind,
        currency: account.currency,
        balanceMinor: account.balanceMinor,
        fence: formatFencingToken(account.fence),
        version: account.version,
        updatedAt: account.updatedAt.toISOString(),
        ledgerSumMinor,
      };
    });
  }

  /** The console's per-account view: customer accounts by id, balances as P5 reads them. */
  async accountList(limit: number): Promise<AccountList> {
    const rows = await this.accounts.listCustomers(this.dataSource, limit + 1);
    return {
      accounts: rows.slice(0, limit).map((a) => ({
        accountId: a.accountId,
        currency: a.currency,
        balanceMinor: a.balanceMinor,
        fence: formatFencingToken(a.fence),
      })),
      truncated: rows.length > limit,
    };
  }

  /** The console's overview: payouts by state, posted per bucket, latency percentiles. */
  async stats(windowSeconds: number): Promise<PayoutStats> {
    const row = await this.payouts.stats(this.dataSource, windowSeconds, STATS_BUCKET_SECONDS);
    const byState = Object.fromEntries(
      PAYOUT_STATES.map((state) => [state, row.by_state[state] ?? 0]),
    ) as Record<PayoutState, number>;
    const postedPerBucket: PayoutStats['postedPerBucket'] = [];
    for (let s = row.first_s; s <= row.last_s; s += STATS_BUCKET_SECONDS) {
      const at = new Date(s * 1000).toISOString();
      postedPerBucket.push({ at, count: row.posted_per_bucket[String(s)] ?? 0 });
    }
    return {
      windowSeconds,
      byState,
      postedPerBucket,
      bucketSeconds: STATS_BUCKET_SECONDS,
      latencyMillis: percentiles(row.latency_ms, row.posted_count),
      latencyMillisAllTime: percentiles(row.latency_all_ms, row.posted_all_count),
    };
  }

  private payoutBody(p: Payout): PayoutRecord {
    return {
      payoutId: p.payoutId,
      accountId: p.accountId,
      amountMinor: p.amountMinor,
      currency: p.currency,
      beneficiaryRef: p.beneficiaryRef,
      clientRef: p.clientRef,
      state: p.state,
      attemptCount: p.attemptCount,
      claimedBy: p.claimedBy,
      tokenStamp: p.tokenStamp === null ? null : formatFencingToken(p.tokenStamp),
      submissionId: p.submissionId,
      railReference: p.railReference,
      failureReason: p.failureReason,
      createdAt: p.createdAt.toISOString(),
      claimedAt: iso(p.claimedAt),
      submittedAt: iso(p.submittedAt),
      ambiguousAt: iso(p.ambiguousAt),
      settledAt: iso(p.settledAt),
      updatedAt: p.updatedAt.toISOString(),
    };
  }
}

/** p50, p90, p99 rounded to whole ms; null when nothing was posted. */
function percentiles(ms: number[] | null, count: number): PayoutStats['latencyMillis'] {
  const [p50, p90, p99] = (ms ?? [null, null, null]).map((v) =>
    v === null ? null : Math.round(v),
  );
  return { p50, p90, p99, count };
}
