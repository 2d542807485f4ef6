import type { ReadOnlyDb } from '../../persistence/read-only-db.gateway';
import type { LoggedTransition } from '../domain/claim-history.rules';

/** What one check found: how many offending entities, and (a capped sample of) which. */
export interface Finding {
  violations: number;
  offenders: Record<string, unknown>[];
}

/** Offenders kept per check for the report and the log line; the count is always complete. */
export const OFFENDERS_MAX = 100;
/** Submissions matched against paydb per round trip. */
const TOKEN_MATCH_CHUNK = 2_000;
/** Bounds the scan loop: 2000 x 5000 = 10 M submissions per run at most. */
const TOKEN_MATCH_CHUNKS_MAX = 5_000;

type WithTotal = { total: string };

/** A rail attempt that keeps its grant proof: what the proof must say, and the proof. */
export interface KeptSubmission {
  submissionId: string;
  payoutId: string;
  accountId: string;
  /** Decimal text, as kept (int64: never a JS number). */
  presentedToken: string;
  ownerId: string;
  grantProof: string | null;
  createdAt: string;
}

/** The last submission judged, in (creation time, id) order: the next run starts after it. */
export interface SubmissionCursor {
  createdAt: string;
  submissionId: string;
}

function finding<R extends WithTotal>(rows: R[], map: (r: R) => Record<string, unknown>): Finding {
  return { violations: rows.length === 0 ? 0 : Number(rows[0].total), offenders: rows.map(map) };
}

/**
 * The read-only SQL of each detective check (docs/references.md). Each is one statement,
 * so it reads one consistent snapshot; `count(*) OVER ()` is the full count
 * before the sample is cut to OFFENDERS_MAX.
 */
export const CheckQueries = {
  /** INV-01: more than one payout of an account between claim and posting. */
  async oneInFlightPerAccount(paydb: ReadOnlyDb, signal?: AbortSignal): Promise<Finding> {
    const rows = await paydb.query<WithTotal & { account_id: string; payout_ids: string[] }>(
      `SELECT account_id, array_agg(payout_id::text ORDER BY created_at, payout_id) AS payout_ids,
              count(*) OVER () AS total
         FROM payout
        WHERE state IN ('CLAIMED', 'RAIL_SUBMITTED', 'RAIL_ACKED')
        GROUP BY account_id
       HAVING count(*) > 1
        ORDER BY account_id
        LIMIT $1`,
      [OFFENDERS_MAX],
      signal,
    );
    return finding(rows, (r) => ({ accountId: r.account_id, payoutIds: r.payout_ids }));
  },

  /**
   * INV-02: at most one submission per payout that was not FENCED or WITHDRAWN
   * (neither presented anything). Counts rows the unique index does not cover
   * (written with fencing off) on purpose.
   */
  async oneLiveSubmissionPerPayout(
    proxydb: ReadOnlyDb,
    signal: AbortSignal | undefined,
    scope: { since: string | null; payoutIds: string[] },
  ): Promise<Finding> {
    // Scoped to the payouts with a submission since `since` (rail_submission_by_time) and
    // those found before, each read by rail_submission_by_payout; all of them when `since`
    // is null (docs/scale.md).
    const from =
      scope.since === null
        ? 'rail_submission'
        : `(SELECT DISTINCT payout_id FROM rail_submission WHERE created_at > $2::timestamptz
             UNION SELECT unnest($3::uuid[])) touched JOIN rail_submission USING (payout_id)`;
    const rows = await proxydb.query<WithTotal & { payout_id: string; submission_ids: string[] }>(
      `SELECT payout_id::text AS payout_id,
              array_agg(submission_id::text ORDER BY created_at, submission_id) AS submission_ids,
              count(*) OVER () AS total
         FROM ${from}
        WHERE outcome IS DISTINCT FROM 'FENCED' AND outcome IS DISTINCT FROM 'WITHDRAWN'
        GROUP BY payout_id
       HAVING count(*) > 1
        ORDER BY payout_id
        LIMIT $1`,
      scope.since === null ? [OFFENDERS_MAX] : [OFFENDERS_MAX, scope.since, scope.payoutIds],
      signal,
    );
    return finding(rows, (r) => ({ payoutId: r.payout_id, submissionIds: r.submission_ids }));
  },

  /**
   * INV-07: every submission that reached (or may have reached) the rail was
   * made under a token paydb saw for that payout — a fenced write recorded in
   * the transition log, or the payout's token stamp. The two databases are
   * separate, so the join happens here, chunk by chunk, from `from` on
   * (rail_submission_by_time), answering where it stopped.
   */
  async submissionTokensMatchClaims(
    proxydb: ReadOnlyDb,
    paydb: ReadOnlyDb,
    graceMs: number,
    signal: AbortSignal | undefined,
    from: SubmissionCursor | null,
  ): Promise<Finding & { after: SubmissionCursor | null }> {
    let violations = 0;
    const offenders: Record<string, unknown>[] = [];
    let after = from;
    for (let chunk = 0; chunk < TOKEN_MATCH_CHUNKS_MAX; chunk++) {
      const subs: {
        submission_id: string;
        payout_id: string;
        presented_token: string;
        created_at: string;
      }[] = await proxydb.query(
        `SELECT submission_id::text AS submission_id, payout_id::text AS payout_id,
                presented_token::text AS presented_token,
                to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at
           FROM rail_submission
          WHERE outcome IS DISTINCT FROM 'FENCED' AND outcome IS DISTINCT FROM 'WITHDRAWN'
            AND created_at <= now() - make_interval(secs => $1::double precision / 1000)
            AND ($2::timestamptz IS NULL OR (created_at, submission_id) > ($2::timestamptz, $3::uuid))
          -- The table's columns, not the text ones of the same names above: ordered by the
          -- index, each chunk reads its own rows, never all those after the cursor.
          ORDER BY rail_submission.created_at, rail_submission.submission_id
          LIMIT $4`,
        [graceMs, after?.createdAt ?? null, after?.submissionId ?? null, TOKEN_MATCH_CHUNK],
        signal,
      );
      if (subs.length === 0) break;
      const unmatched: { submission_id: string; payout_id: string; token: string }[] =
        await paydb.query(
          `SELECT s.submission_id::text AS submission_id, s.payout_id::text AS payout_id,
                  s.token::text AS token
             FROM unnest($1::uuid[], $2::uuid[], $3::bigint[]) AS s(submission_id, payout_id, token)
            WHERE NOT EXISTS (SELECT 1 FROM payout_transition t
                               WHERE t.payout_id = s.payout_id AND t.token = s.token)
              AND NOT EXISTS (SELECT 1 FROM payout p
                               WHERE p.payout_id = s.payout_id AND p.token_stamp = s.token)
            ORDER BY s.submission_id`,
          [
            subs.map((s) => s.submission_id),
            subs.map((s) => s.payout_id),
            subs.map((s) => s.presented_token),
          ],
          signal,
        );
      violations += unmatched.length;
      for (const u of unmatched) {
        if (offenders.length >= OFFENDERS_MAX) break;
        offenders.push({
          submissionId: u.submission_id,
          payoutId: u.payout_id,
          presentedToken: u.token,
        });
      }
      const last = subs[subs.length - 1];
      after = { createdAt: last.created_at, submissionId: last.submission_id };
      if (subs.length < TOKEN_MATCH_CHUNK) break;
    }
    return { violations, offenders, after };
  },

  /**
   * INV-07 inputs: the next rail attempts that keep a grant proof (written since
   * GrantProofKept, migrations/proxydb), settled, after `after` in
   * (creation time, id) order on rail_submission_by_time; at most `limit`.
   */
  async keptSubmissionsAfter(
    proxydb: ReadOnlyDb,
    settleMs: number,
    after: SubmissionCursor | null,
    limit: number,
    signal?: AbortSignal,
  ): Promise<KeptSubmission[]> {
    const rows = await proxydb.query<{
      submission_id: string;
      payout_id: string;
      account_id: string;
      presented_token: string;
      owner_id: string;
      grant_proof: string | null;
      created_at: string;
    }>(
      `SELECT submission_id::text AS submission_id, payout_id::text AS payout_id, account_id,
              presented_token::text AS presented_token, owner_id, grant_proof,
              to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at
         FROM rail_submission
        WHERE grant_proof_kept
          AND created_at <= now() - make_interval(secs => $1::double precision / 1000)
          AND ($2::timestamptz IS NULL OR (created_at, submission_id) > ($2::timestamptz, $3::uuid))
        ORDER BY rail_submission.created_at, rail_submission.submission_id
        LIMIT $4`,
      [settleMs, after?.createdAt ?? null, after?.submissionId ?? null, limit],
      signal,
    );
    return rows.map((r) => ({
      submissionId: r.submission_id,
      payoutId: r.payout_id,
      accountId: r.account_id,
      presentedToken: r.presented_token,
      ownerId: r.owner_id,
      grantProof: r.grant_proof,
      createdAt: r.created_at,
    }));
  },

  /**
   * INV-01 inputs: the next transitions after `afterId` in log order (the
   * primary key), at most `limit`, each saying whether it is older than the
   * settle time: the caller stops at the first that is not, since a write
   * begun earlier may still commit below it.
   */
  async transitionsAfter(
    paydb: ReadOnlyDb,
    settleMs: number,
    afterId: string | null,
    limit: number,
    signal?: AbortSignal,
  ): Promise<{ transitionId: string; payoutId: string; settled: boolean }[]> {
    const rows = await paydb.query<{ transition_id: string; payout_id: string; settled: boolean }>(
      `SELECT transition_id::text AS transition_id, payout_id::text AS payout_id,
              created_at <= now() - make_interval(secs => $2::double precision / 1000) AS settled
         FROM payout_transition
        WHERE transition_id > COALESCE($1::bigint, 0)
        ORDER BY transition_id
        LIMIT $3`,
      [afterId, settleMs, limit],
      signal,
    );
    return rows.map((r) => ({
      transitionId: r.transition_id,
      payoutId: r.payout_id,
      settled: r.settled,
    }));
  },

  /**
   * INV-01: the whole transition log of each payout, in log order, with the
   * payout's state, in one snapshot (payout_transition_by_payout).
   */
  async claimHistories(
    paydb: ReadOnlyDb,
    payoutIds: string[],
    signal?: AbortSignal,
  ): Promise<Map<string, { state: string; log: LoggedTransition[] }>> {
    const rows = await paydb.query<{
      payout_id: string;
      state: string;
      transition_id: string;
      from_state: string;
      to_state: string;
      event: string;
      chain_seq: string;
    }>(
      `SELECT p.payout_id::text AS payout_id, p.state, t.transition_id::text AS transition_id,
              t.from_state, t.to_state, t.event, t.chain_seq::text AS chain_seq
         FROM payout p JOIN payout_transition t USING (payout_id)
        WHERE p.payout_id = ANY($1::uuid[])
        ORDER BY t.payout_id, t.transition_id`,
      [payoutIds],
      signal,
    );
    const histories = new Map<string, { state: string; log: LoggedTransition[] }>();
    for (const r of rows) {
      const h = histories.get(r.payout_id) ?? { state: r.state, log: [] };
      h.log.push({
        transitionId: r.transition_id,
        fromState: r.from_state,
        toState: r.to_state,
        event: r.event,
        chainSeq: r.chain_seq,
      });
      histories.set(r.payout_id, h);
    }
    return histories;
  },

  /** INV-04 inputs: the account fences (paydb). */
  async accountFences(paydb: ReadOnlyDb, signal?: AbortSignal): Promise<Map<string, bigint>> {
    const rows = await paydb.query<{ account_id: string; fence: string }>(
      `SELECT account_id, fence::text AS fence FROM account`,
      [],
      signal,
    );
    return new Map(rows.map((r) => [r.account_id, BigInt(r.fence)]));
  },

  /** INV-04 inputs: the rail high-water marks (proxydb). */
  async railHighWater(proxydb: ReadOnlyDb, signal?: AbortSignal): Promise<Map<string, bigint>> {
    const rows = await proxydb.query<{ account_id: string; highest_token: string }>(
      `SELECT account_id, highest_token::text AS highest_token FROM rail_high_water`,
      [],
      signal,
    );
    return new Map(rows.map((r) => [r.account_id, BigInt(r.highest_token)]));
  },
};
