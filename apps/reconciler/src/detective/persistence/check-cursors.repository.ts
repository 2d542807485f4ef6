import assert from 'node:assert/strict';
import type { ReadOnlyDb } from '../../persistence/read-only-db.gateway';
import { judgeClaimHistory } from '../domain/claim-history.rules';
import {
  CheckQueries,
  OFFENDERS_MAX,
  type Finding,
  type KeptSubmission,
  type SubmissionCursor,
} from './check-queries.repository';

/** What a grant check said of one kept submission: null, a proven grant; else why not. */
export type GrantJudge = (submission: KeptSubmission) => Promise<string | null>;

/**
 * Told what a check over kept records found first, chunk by chunk, as its
 * cursor moves past it: a chunk announced is never read again, even when a
 * later chunk of the same run fails.
 */
export type Announce = (fresh: Record<string, unknown>[]) => void;

/** Kept submissions judged per statement, and statements per run (20,000 per run at most). */
const GRANT_CHUNK = 1_000;
const GRANT_CHUNKS_MAX = 20;
/** Transitions read per statement, and statements per run (20,000 per run at most). */
const HISTORY_CHUNK = 2_000;
const HISTORY_CHUNKS_MAX = 10;
/** Broken histories remembered by payout, so a payout written again is not counted twice. */
const HISTORIES_FOUND_MAX = 10_000;

const SNAPSHOT_VERSION = 1;

export interface CursorSnapshot {
  version: typeof SNAPSHOT_VERSION;
  groups: { since: string | null; found: string[] };
  balances: { since: string | null; sums: Record<string, string> };
  submissions: { since: string | null; found: string[] };
  tokens: {
    after: { createdAt: string; submissionId: string } | null;
    found: Record<string, unknown>[];
    violations: number;
  };
  /** Absent in a snapshot kept before these checks: they then start from the beginning. */
  grants?: {
    after: { createdAt: string; submissionId: string } | null;
    found: Record<string, unknown>[];
    violations: number;
  };
  histories?: { afterId: string | null; found: Record<string, unknown>[]; beyond: number };
}

/** A database time as the cursors keep it (timestamptz::text); anything else is refused. */
const isTime = (v: unknown): v is string => typeof v === 'string' && !Number.isNaN(Date.parse(v));

function timeOrNull(v: unknown): string | null {
  assert.ok(v === null || isTime(v), 'a cursor is a time or null');
  return v;
}

function strings(v: unknown): string[] {
  assert.ok(Array.isArray(v) && v.every((x) => typeof x === 'string'), 'a list of ids');
  return v;
}

/**
 * The detective checks that read append-only records, made to cost what was
 * appended since their last run instead of the history (docs/scale.md). Each
 * remembers, in memory, the database time its last run read up to (minus a
 * settle time: a write begun earlier may commit later) and what it found:
 * records are never changed or removed by the services, so a violation found
 * stays one and is re-checked by key, and everything else is read once. The
 * first run after a start reads from the beginning, unless the cursors were
 * kept in a file (RECONCILER_CHECK_CURSOR_FILE: `snapshot` / `restore`).
 */
export class CheckCursors {
  private groups = { since: null as string | null, found: new Set<string>() };
  private balances = { since: null as string | null, sums: new Map<string, bigint>() };
  private submissions = { since: null as string | null, found: new Set<string>() };
  private tokens = {
    after: null as { createdAt: string; submissionId: string } | null,
    found: [] as Record<string, unknown>[],
    violations: 0,
  };
  private grants = {
    after: null as SubmissionCursor | null,
    found: [] as Record<string, unknown>[],
    violations: 0,
  };
  /** By payout id; `beyond` counts those found past HISTORIES_FOUND_MAX. */
  private histories = {
    afterId: null as string | null,
    found: new Map<string, Record<string, unknown>>(),
    beyond: 0,
  };

  constructor(private readonly settleMs: number) {}

  /** What the cursors hold, as JSON (sums as decimal strings). */
  snapshot(): CursorSnapshot {
    return {
      version: SNAPSHOT_VERSION,
      groups: { since: this.groups.since, found: [...this.groups.found] },
      balances: {
        since: this.balances.since,
        sums: Object.fromEntries([...this.balances.sums].map(([a, v]) => [a, v.toString()])),
      },
      submissions: { since: this.submissions.since, found: [...this.submissions.found] },
      tokens: { ...this.tokens, found: [...this.tokens.found] },
      grants: { ...this.grants, found: [...this.grants.found] },
      histories: {
        afterId: this.histories.afterId,
        found: [...this.histories.found.values()],
        beyond: this.histories.beyond,
      },
    };
  }

  /** Cursors as a snapshot left them; throws on anything that is not one (then start afresh). */
  static restore(settleMs: number, raw: unknown): CheckCursors {
    const s = raw as CursorSnapshot;
    assert.equal(s?.version, SNAPSHOT_VERSION, 'not a detective cursor snapshot of this version');
    const cursors = new CheckCursors(settleMs);
    cursors.groups = { since: timeOrNull(s.groups.since), found: new Set(strings(s.groups.found)) };
    cursors.balances = {
      since: timeOrNull(s.balances.since),
      sums: new Map(Object.entries(s.balances.sums).map(([a, v]) => [a, BigInt(String(v))])),
    };
    cursors.submissions = {
      since: timeOrNull(s.submissions.since),
      found: new Set(strings(s.submissions.found)),
    };
    const after = s.tokens.after;
    assert.ok(
      after === null || (isTime(after.createdAt) && typeof after.submissionId === 'string'),
    );
    assert.ok(Array.isArray(s.tokens.found) && Number.isSafeInteger(s.tokens.violations));
    cursors.tokens = { after, found: s.tokens.found, violations: s.tokens.violations };
    if (s.grants !== undefined) cursors.grants = restoredGrants(s.grants);
    if (s.histories !== undefined) cursors.histories = restoredHistories(s.histories);
    return cursors;
  }

  /** INV-03: the groups written since the last run, and those found unbalanced before. */
  async ledgerGroupsBalanced(paydb: ReadOnlyDb, signal?: AbortSignal): Promise<Finding> {
    const rows = await paydb.query<{ txn_group_id: string; sum_minor: string; until: string }>(
      `WITH w AS (SELECT now() - make_interval(secs => $2::double precision / 1000) AS until),
            touched AS (SELECT DISTINCT txn_group_id FROM ledger_entry
                         WHERE created_at > COALESCE($1::timestamptz, '-infinity')
                        UNION SELECT unnest($3::uuid[]))
       SELECT g.txn_group_id::text AS txn_group_id, g.sum_minor::text AS sum_minor, w.until::text AS until
         FROM w LEFT JOIN (SELECT l.txn_group_id, sum(l.amount_minor) AS sum_minor
                             FROM ledger_entry l JOIN touched USING (txn_group_id)
                            GROUP BY l.txn_group_id HAVING sum(l.amount_minor) <> 0) g ON true
        ORDER BY 1`,
      [this.groups.since, this.settleMs, [...this.groups.found]],
      signal,
    );
    this.groups.since = rows[0].until;
    const found = rows.filter((r) => r.txn_group_id !== null);
    this.groups.found = new Set(found.map((r) => r.txn_group_id));
    return {
      violations: found.length,
      offenders: found
        .slice(0, OFFENDERS_MAX)
        .map((r) => ({ txnGroupId: r.txn_group_id, sumMinor: r.sum_minor })),
    };
  }

  /**
   * INV-03 / FR-25: each account's balance against the sum of its entries, the
   * sum kept here up to the settled time and the entries since read each run.
   * An account that does not match is summed whole before it is reported, so
   * a write that committed after its settle time is no false alarm.
   */
  async balanceEqualsLedger(paydb: ReadOnlyDb, signal?: AbortSignal): Promise<Finding> {
    const rows = await paydb.query<{
      account_id: string;
      balance_minor: string;
      settled_minor: string;
      recent_minor: string;
      until: string;
    }>(
      `WITH w AS (SELECT now() - make_interval(secs => $2::double precision / 1000) AS until),
            moved AS (SELECT l.account_id,
                             sum(l.amount_minor) FILTER (WHERE l.created_at <= w.until) AS settled,
                             sum(l.amount_minor) FILTER (WHERE l.created_at > w.until) AS recent
                        FROM ledger_entry l, w
                       WHERE l.created_at > COALESCE($1::timestamptz, '-infinity')
                       GROUP BY l.account_id)
       SELECT a.account_id, a.balance_minor::text AS balance_minor,
              COALESCE(m.settled, 0)::text AS settled_minor, COALESCE(m.recent, 0)::text AS recent_minor,
              w.until::text AS until
         FROM account a CROSS JOIN w LEFT JOIN moved m USING (account_id)`,
      [this.balances.since, this.settleMs],
      signal,
    );
    const suspects: string[] = [];
    for (const r of rows) {
      const settled = (this.balances.sums.get(r.account_id) ?? 0n) + BigInt(r.settled_minor);
      this.balances.sums.set(r.account_id, settled);
      if (settled + BigInt(r.recent_minor) !== BigInt(r.balance_minor)) suspects.push(r.account_id);
    }
    if (rows.length > 0) this.balances.since = rows[0].until;
    if (suspects.length === 0) return { violations: 0, offenders: [] };
    return this.sumWhole(paydb, suspects, rows[0].until, signal);
  }

  /** The suspects' entries summed whole in one snapshot; their kept sums start again from these. */
  private async sumWhole(
    paydb: ReadOnlyDb,
    accounts: string[],
    until: string,
    signal?: AbortSignal,
  ): Promise<Finding> {
    const rows = await paydb.query<{
      account_id: string;
      balance_minor: string;
      ledger_sum_minor: string;
      settled_minor: string;
      total: string;
    }>(
      `SELECT a.account_id, a.balance_minor::text AS balance_minor,
              COALESCE(sum(l.amount_minor), 0)::text AS ledger_sum_minor,
              COALESCE(sum(l.amount_minor) FILTER (WHERE l.created_at <= $2::timestamptz), 0)::text
                AS settled_minor
         FROM account a LEFT JOIN ledger_entry l USING (account_id)
        WHERE a.account_id = ANY($1::text[])
        GROUP BY a.account_id, a.balance_minor
        ORDER BY a.account_id`,
      [accounts, until],
      signal,
    );
    for (const r of rows) this.balances.sums.set(r.account_id, BigInt(r.settled_minor));
    const found = rows.filter((r) => r.balance_minor !== r.ledger_sum_minor);
    return {
      violations: found.length,
      offenders: found.slice(0, OFFENDERS_MAX).map((r) => ({
        accountId: r.account_id,
        balanceMinor: r.balance_minor,
        ledgerSumMinor: r.ledger_sum_minor,
      })),
    };
  }

  /** INV-02: the payouts with a submission since the last run, and those found before. */
  async oneLiveSubmissionPerPayout(proxydb: ReadOnlyDb, signal?: AbortSignal): Promise<Finding> {
    const rows = await proxydb.query<{ until: string }>(
      `SELECT (now() - make_interval(secs => $1::double precision / 1000))::text AS until`,
      [this.settleMs],
      signal,
    );
    const found = await CheckQueries.oneLiveSubmissionPerPayout(proxydb, signal, {
      since: this.submissions.since,
      payoutIds: [...this.submissions.found],
    });
    this.submissions.since = rows[0].until;
    this.submissions.found = new Set(found.offenders.map((o) => String(o.payoutId)));
    return found;
  }

  /** INV-07: the submissions not judged yet; a mismatch found stays one (both records are kept). */
  async submissionTokensMatchClaims(
    proxydb: ReadOnlyDb,
    paydb: ReadOnlyDb,
    graceMs: number,
    signal?: AbortSignal,
  ): Promise<Finding> {
    const run = await CheckQueries.submissionTokensMatchClaims(
      proxydb,
      paydb,
      graceMs,
      signal,
      this.tokens.after,
    );
    this.tokens.after = run.after;
    this.tokens.violations += run.violations;
    const room = OFFENDERS_MAX - this.tokens.found.length;
    this.tokens.found.push(...run.offenders.slice(0, Math.max(room, 0)));
    return { violations: this.tokens.violations, offenders: [...this.tokens.found] };
  }
  /**
   * INV-07 against grants: every rail attempt written since the last run has a
   * grant proof the lock-server signed for its account's lock, token and owner
   * (`judge`). A submission found stays found: both it and its proof are immutable.
   */
  async submissionGrants(
    proxydb: ReadOnlyDb,
    judge: GrantJudge,
    announce: Announce,
    signal?: AbortSignal,
  ): Promise<Finding> {
    for (let chunk = 0; chunk < GRANT_CHUNKS_MAX; chunk++) {
      const fresh: Record<string, unknown>[] = [];
      const subs = await CheckQueries.keptSubmissionsAfter(
        proxydb,
        this.settleMs,
        this.grants.after,
        GRANT_CHUNK,
        signal,
      );
      for (const sub of subs) {
        const reason = await judge(sub);
        if (reason !== null) fresh.push(grantOffender(sub, reason));
      }
      if (subs.length > 0) {
        const last = subs[subs.length - 1];
        this.grants.after = { createdAt: last.createdAt, submissionId: last.submissionId };
      }
      this.grants.violations += fresh.length;
      const room = Math.max(OFFENDERS_MAX - this.grants.found.length, 0);
      this.grants.found.push(...fresh.slice(0, room));
      announce(fresh);
      if (subs.length < GRANT_CHUNK) break;
    }
    return { violations: this.grants.violations, offenders: [...this.grants.found] };
  }

  /**
   * INV-01's history half: the payouts with a transition since the last run have
   * a consistent claim history (`judgeClaimHistory`), each judged whole. A broken
   * history stays broken (the log is append-only), so it is remembered by payout
   * and counted once however often the payout is written again.
   */
  async claimHistories(
    paydb: ReadOnlyDb,
    announce: Announce,
    signal?: AbortSignal,
  ): Promise<Finding> {
    for (let chunk = 0; chunk < HISTORY_CHUNKS_MAX; chunk++) {
      const read = await CheckQueries.transitionsAfter(
        paydb,
        this.settleMs,
        this.histories.afterId,
        HISTORY_CHUNK,
        signal,
      );
      const firstUnsettled = read.findIndex((t) => !t.settled);
      const settled = firstUnsettled === -1 ? read : read.slice(0, firstUnsettled);
      if (settled.length === 0) break;
      const fresh = await this.judgeHistories(paydb, settled, signal);
      this.histories.afterId = settled[settled.length - 1].transitionId;
      announce(fresh);
      if (settled.length < HISTORY_CHUNK) break;
    }
    const { found, beyond } = this.histories;
    return {
      violations: found.size + beyond,
      offenders: [...found.values()].slice(0, OFFENDERS_MAX),
    };
  }

  /** The touched payouts not found before, judged whole; what breaks is remembered. */
  private async judgeHistories(
    paydb: ReadOnlyDb,
    touched: { payoutId: string }[],
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>[]> {
    const found = this.histories.found;
    const payoutIds = [...new Set(touched.map((t) => t.payoutId))].filter((p) => !found.has(p));
    const histories = await CheckQueries.claimHistories(paydb, payoutIds, signal);
    const fresh: Record<string, unknown>[] = [];
    for (const [payoutId, { state, log }] of histories) {
      const verdict = judgeClaimHistory(log, state);
      if (verdict === null) continue;
      const offender = { payoutId, state, ...verdict };
      fresh.push(offender);
      if (found.size < HISTORIES_FOUND_MAX) found.set(payoutId, offender);
      else this.histories.beyond++;
    }
    return fresh;
  }
}

function grantOffender(sub: KeptSubmission, reason: string): Record<string, unknown> {
  return {
    submissionId: sub.submissionId,
    payoutId: sub.payoutId,
    accountId: sub.accountId,
    presentedToken: sub.presentedToken,
    ownerId: sub.ownerId,
    reason,
  };
}

function restoredGrants(g: NonNullable<CursorSnapshot['grants']>): CheckCursors['grants'] {
  const after = g.after;
  assert.ok(after === null || (isTime(after.createdAt) && typeof after.submissionId === 'string'));
  assert.ok(Array.isArray(g.found) && Number.isSafeInteger(g.violations));
  return { after, found: g.found, violations: g.violations };
}

function restoredHistories(h: NonNullable<CursorSnapshot['histories']>): CheckCursors['histories'] {
  assert.ok(h.afterId === null || /^[0-9]+$/.test(String(h.afterId)), 'a transition id or null');
  assert.ok(Array.isArray(h.found) && Number.isSafeInteger(h.beyond));
  const found = new Map(h.found.map((o) => [String(o.payoutId), o]));
  return { afterId: h.afterId, found, beyond: h.beyond };
}
