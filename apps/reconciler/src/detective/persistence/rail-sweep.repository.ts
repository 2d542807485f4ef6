import { TERMINAL_PAYOUT_STATES_SQL } from '@dlock/payout-contract';
import type { ReadOnlyDb } from '../../persistence/read-only-db.gateway';
import type { TerminalPayout, TerminalState } from '../domain/rail-sweep-findings.rules';

/** A place in the sweep's order: (terminal time, payout id), exclusive. */
export interface SweepCursor {
  terminalAt: string;
  payoutId: string;
}

export interface DueQuery {
  /** Last payout already looked up; null: start at the look-back floor. */
  after: SweepCursor | null;
  /** Last payout to include (a re-check round stops where the head sweep was); null: no bound. */
  upTo: SweepCursor | null;
  settleMs: number;
  lookbackMs: number;
  limit: number;
}

/**
 * The next terminal payouts due for a rail look-up, in keyset order. One
 * statement on the database's clock. The terminal time is `settled_at`, which
 * every transition into POSTED, FAILED or ABANDONED stamps; `updated_at` stands
 * in should a row lack it, so no terminal payout is invisible to the sweep.
 */
export async function duePayouts(
  paydb: ReadOnlyDb,
  q: DueQuery,
  signal?: AbortSignal,
): Promise<TerminalPayout[]> {
  const rows = await paydb.query<{ payout_id: string; state: TerminalState; terminal_at: string }>(
    `SELECT payout_id::text AS payout_id, state,
            to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS terminal_at
       FROM (SELECT payout_id, state, COALESCE(settled_at, updated_at) AS t
               FROM payout
              WHERE state IN ${TERMINAL_PAYOUT_STATES_SQL}) p
      WHERE t <= now() - make_interval(secs => $1::double precision / 1000)
        AND CASE WHEN $3::timestamptz IS NULL
                 THEN t >= now() - make_interval(secs => $2::double precision / 1000)
                 ELSE (t, payout_id) > ($3::timestamptz, $4::uuid) END
        AND ($5::timestamptz IS NULL OR (t, payout_id) <= ($5::timestamptz, $6::uuid))
      ORDER BY t, p.payout_id -- the uuid the cursor compares, not the text selected
      LIMIT $7`,
    [
      q.settleMs,
      q.lookbackMs,
      q.after?.terminalAt ?? null,
      q.after?.payoutId ?? null,
      q.upTo?.terminalAt ?? null,
      q.upTo?.payoutId ?? null,
      q.limit,
    ],
    signal,
  );
  return rows.map((r) => ({ payoutId: r.payout_id, state: r.state, terminalAt: r.terminal_at }));
}
