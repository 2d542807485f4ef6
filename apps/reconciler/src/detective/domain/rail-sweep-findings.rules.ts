import {
  RAIL_SWEEP_FINDINGS,
  type RailSweepFinding,
  type TerminalPayoutState,
} from '@dlock/payout-contract';

/** The payout states the rail sweep looks up: every state a payout never leaves. */
export type TerminalState = TerminalPayoutState;

/** One terminal payout as the sweep reads it from paydb. */
export interface TerminalPayout {
  payoutId: string;
  state: TerminalState;
  /** When it became terminal (`settled_at`), microsecond ISO text: the sweep's keyset. */
  terminalAt: string;
}

export interface OpenFinding {
  finding: RailSweepFinding;
  payoutId: string;
  clientRef: string;
  state: TerminalState;
  terminalAt: string;
  railReferences: string[];
  detectedAt: string;
}

/**
 * What the rail's record says about a terminal payout (docs/reconciler.md,
 * "Rail sweep"). Pure. Every transfer counts, settled or not: a booked
 * transfer is money that moved.
 */
export function judge(state: TerminalState, transfers: number): RailSweepFinding[] {
  const found: RailSweepFinding[] = [];
  if (transfers >= 2) found.push('rail_double_payment');
  if (state === 'POSTED' && transfers === 0) found.push('posted_without_transfer');
  if (state !== 'POSTED' && transfers >= 1) found.push('paid_but_not_posted');
  return found;
}

/**
 * The findings still open, one per payout and finding, so each is counted and
 * announced once however often the payout is looked up again. A later look-up
 * that no longer shows it closes it. Bounded: past `max` the oldest entries are
 * forgotten (they were counted and logged when found).
 */
export class OpenFindings {
  private readonly open = new Map<string, OpenFinding>();
  private readonly counts = new Map<RailSweepFinding, number>();

  constructor(private readonly max: number) {}

  /** Records one look-up of `payout`; returns the findings seen for the first time. */
  observe(
    payout: TerminalPayout & { clientRef: string },
    railReferences: string[],
    now: string,
  ): OpenFinding[] {
    const found = judge(payout.state, railReferences.length);
    const fresh: OpenFinding[] = [];
    for (const finding of RAIL_SWEEP_FINDINGS) {
      const key = `${finding}:${payout.payoutId}`;
      const known = this.open.get(key);
      if (!found.includes(finding)) {
        if (known) this.forget(key, known);
        continue;
      }
      const record: OpenFinding = {
        finding,
        payoutId: payout.payoutId,
        clientRef: payout.clientRef,
        state: payout.state,
        terminalAt: payout.terminalAt,
        railReferences: [...railReferences],
        detectedAt: known?.detectedAt ?? now,
      };
      this.open.set(key, record);
      if (!known) {
        fresh.push(record);
        this.counts.set(finding, this.count(finding) + 1);
      }
    }
    for (const [key, oldest] of this.open) {
      if (this.open.size <= this.max) break;
      this.forget(key, oldest);
    }
    return fresh;
  }

  count(finding: RailSweepFinding): number {
    return this.counts.get(finding) ?? 0;
  }

  list(limit: number): OpenFinding[] {
    const out: OpenFinding[] = [];
    for (const f of this.open.values()) {
      if (out.length >= limit) break;
      out.push(f);
    }
    return out;
  }

  private forget(key: string, f: OpenFinding): void {
    this.open.delete(key);
    this.counts.set(f.finding, this.count(f.finding) - 1);
  }
}
