import type { SafetyEvents } from '@dlock/observability';

/** The guard label of the lock-server's own regression check (lock_token_regression_total{guard}). */
export const LOCK_SERVER_GUARD = 'lock-server';

/**
 * The highest fencing token this process has read back from lockdb (grants
 * and revocation floors), against which `fencing_token_seq` is checked each
 * time the database is probed or comes back (docs/operations.md, "lockdb
 * failover"). The sequence's last value below it means lockdb went back in
 * time (an asynchronous standby promoted, a restore): the next nextval would
 * reissue a token already handed out (INV-04). Only tokens the database has
 * already returned are counted, so concurrent grants finishing in any order
 * never look like a regression. A process knows only its own tokens; the
 * reconciler's token-source check covers the rest (docs/operations.md).
 */
export class TokenHighWater {
  private highest = 0n;
  /** A regression was reported and the sequence has not caught up since: report it once. */
  private reported = false;

  constructor(private readonly safety: SafetyEvents) {
    safety.watchesRegression(LOCK_SERVER_GUARD);
  }

  /** A token lockdb returned: a grant's or a revocation's floor. */
  issued(token: bigint): void {
    if (token > this.highest) this.highest = token;
  }

  /**
   * The highest token so far: taken before a probe is sent, it is what the
   * probe's sequence value must reach. A grant answered while the probe is in
   * flight may carry a token minted after the probe read the sequence.
   */
  mark(): bigint {
    return this.highest;
  }

  /**
   * True when `sequenceValue` (fencing_token_seq's last value, read by a
   * probe sent when the highest token was `highestBefore`) is below a token
   * this process had already handed out. Reports `token_regression` once
   * until the sequence is above it again (a probe sees it every interval).
   */
  behind(sequenceValue: bigint, highestBefore: bigint = this.highest): boolean {
    if (sequenceValue >= highestBefore) {
      this.reported = false;
      return false;
    }
    if (!this.reported) {
      this.reported = true;
      this.safety.tokenRegression({
        guard: LOCK_SERVER_GUARD,
        presentedToken: sequenceValue,
        highestToken: highestBefore,
        source: 'fencing_token_seq',
      });
    }
    return true;
  }
}
