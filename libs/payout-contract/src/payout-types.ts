/** The eight payout states of docs/payment-resource.md. */
export const PAYOUT_STATES = [
  'PENDING',
  'CLAIMED',
  'RAIL_SUBMITTED',
  'RAIL_ACKED',
  'RAIL_AMBIGUOUS',
  'POSTED',
  'FAILED',
  'ABANDONED',
] as const;
export type PayoutState = (typeof PAYOUT_STATES)[number];

/** The states a payout never leaves: no row of the transition table starts in one. */
export const TERMINAL_PAYOUT_STATES = [
  'POSTED',
  'FAILED',
  'ABANDONED',
] as const satisfies readonly PayoutState[];
export type TerminalPayoutState = (typeof TERMINAL_PAYOUT_STATES)[number];

export function isTerminalPayoutState(state: string): state is TerminalPayoutState {
  return (TERMINAL_PAYOUT_STATES as readonly string[]).includes(state);
}

/**
 * The terminal states as a SQL list, `('POSTED', 'FAILED', 'ABANDONED')`, for `state IN …`. Built
 * from the constant above, never from input, so splicing it into a statement is safe; paydb's
 * sweep index is declared over the same list (migrations/paydb/1796140800000-sweep-index.ts).
 */
export const TERMINAL_PAYOUT_STATES_SQL = sqlList(TERMINAL_PAYOUT_STATES);

/** Between the claim and a terminal state: neither PENDING nor terminal. */
export const IN_FLIGHT_PAYOUT_STATES = PAYOUT_STATES.filter(
  (s) => s !== 'PENDING' && !isTerminalPayoutState(s),
);

/** {@link IN_FLIGHT_PAYOUT_STATES} as a SQL list, built like the terminal one. */
export const IN_FLIGHT_PAYOUT_STATES_SQL = sqlList(IN_FLIGHT_PAYOUT_STATES);

function sqlList(states: readonly PayoutState[]): string {
  return `(${states.map((s) => `'${s}'`).join(', ')})`;
}

export function isPayoutState(value: unknown): value is PayoutState {
  return typeof value === 'string' && (PAYOUT_STATES as readonly string[]).includes(value);
}

/**
 * Rail submission outcomes recorded by the proxy; NULL (unresolved) is `null`.
 * FENCED and WITHDRAWN rows provably presented nothing to the rail (a stale
 * token; the connection closed before a byte was written), so they never count
 * as the payout's live submission (docs/rail.md).
 */
export const RAIL_OUTCOMES = ['ACKED', 'REJECTED', 'TIMEOUT', 'FENCED', 'WITHDRAWN'] as const;
export type RailOutcome = (typeof RAIL_OUTCOMES)[number];

export function isRailOutcome(value: unknown): value is RailOutcome {
  return typeof value === 'string' && (RAIL_OUTCOMES as readonly string[]).includes(value);
}

/** True for a record that may have moved money: unresolved, or resolved after a presentation. */
export function isLiveRailOutcome(outcome: RailOutcome | null): boolean {
  return outcome !== 'FENCED' && outcome !== 'WITHDRAWN';
}

/** What the executor reports for one payout attempt (docs/executor.md). */
export type ExecutionOutcome =
  | { kind: 'posted'; payoutId: string }
  | { kind: 'failed'; payoutId: string; reason: string }
  | { kind: 'abandoned'; payoutId: string; reason: string }
  | { kind: 'ambiguous'; payoutId: string }
  | { kind: 'contended'; payoutId: string }
  | { kind: 'fenced'; payoutId: string; where: 'account' | 'rail' };
