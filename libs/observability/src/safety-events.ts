import { Injectable, Logger } from '@nestjs/common';
import { counter } from '@dlock/metrics';
import { register, type Counter, type Registry } from 'prom-client';
import { SafetyEventFeed } from './safety-event-feed';

/** The safety events of docs/operations.md: each is a structured log event and a metric. */
export type SafetyEventName =
  | 'fenced_out'
  | 'rail_ambiguous'
  | 'duplicate_rail_submission_attempted'
  | 'session_lost'
  | 'lock_revoked'
  | 'invalid_transition'
  | 'token_regression'
  | 'proof_rejected'
  | RailSweepFinding;

/** What the reconciler's rail sweep can find for a terminal payout (docs/reconciler.md). */
export const RAIL_SWEEP_FINDINGS = [
  'rail_double_payment',
  'posted_without_transfer',
  'paid_but_not_posted',
] as const;
export type RailSweepFinding = (typeof RAIL_SWEEP_FINDINGS)[number];

export type FencedResource = 'account' | 'ledger' | 'rail';

function counterIn(
  registry: Registry,
  name: string,
  help: string,
  labelNames: string[] = [],
): Counter {
  return counter({ name, help, labelNames, registers: [registry] });
}

/**
 * One place that names every safety signal. Labels never carry a key, payout
 * id, account id or token (NFR-09): those go to the log line only.
 */
@Injectable()
export class SafetyEvents {
  private readonly logger = new Logger('safety');
  readonly fencedOutTotal: Counter;
  readonly railAmbiguousTotal: Counter;
  readonly duplicateAttemptedTotal: Counter;
  readonly sessionLostTotal: Counter;
  readonly revocationsTotal: Counter;
  readonly invalidTransitionTotal: Counter;
  readonly tokenRegressionTotal: Counter;
  readonly railSweepFindingsTotal: Counter;
  readonly proofRejectedTotal: Counter;

  /**
   * @param feed the recent events GET /v1/safety-events serves: every event
   *   emitted here, and only here, is appended to it.
   */
  constructor(
    registry: Registry = register,
    readonly feed: SafetyEventFeed = new SafetyEventFeed(),
  ) {
    this.fencedOutTotal = counterIn(
      registry,
      'lock_fenced_out_total',
      'Writes rejected by a fence guard',
      ['resource'],
    );
    this.railAmbiguousTotal = counterIn(
      registry,
      'rail_ambiguous_total',
      'Rail attempts with an unknown outcome',
    );
    this.duplicateAttemptedTotal = counterIn(
      registry,
      'rail_duplicate_attempted_total',
      'Submissions refused because the payout already had one',
    );
    this.sessionLostTotal = counterIn(
      registry,
      'lock_session_lost_total',
      'Lock sessions a client lost',
    );
    this.revocationsTotal = counterIn(
      registry,
      'lock_revocations_total',
      'Operator force-revocations',
    );
    this.invalidTransitionTotal = counterIn(
      registry,
      'payout_invalid_transition_total',
      'Payout transitions rejected by the transition table',
    );
    this.tokenRegressionTotal = counterIn(
      registry,
      'lock_token_regression_total',
      'Observed tokens below a value already seen at a guard',
      ['guard'],
    );
    this.railSweepFindingsTotal = counterIn(
      registry,
      'reconciler_rail_sweep_findings_total',
      'Terminal payouts the rail disagrees with, once per payout and finding',
      ['finding'],
    );
    this.proofRejectedTotal = counterIn(
      registry,
      'proof_rejected_total',
      'Fenced requests refused because their grant proof or payout instruction did not prove their claim',
      ['guard', 'proof', 'reason'],
    );
  }

  // ---- series at 0 from the start ---------------------------------------------
  // A labelled counter appears at its first event, and a series that appears at 1 has no
  // increase(): the alert on it (docs/operations.md, "Alerts") would miss that event. So
  // each guard names, when it is built, the series it can emit, and they start at 0.

  /** This process guards `resource` (lock_fenced_out_total{resource}). */
  guardsResource(resource: FencedResource): void {
    this.fencedOutTotal.inc({ resource }, 0);
  }

  /** This process can see a token regression as `guard` (lock_token_regression_total{guard}). */
  watchesRegression(guard: string): void {
    this.tokenRegressionTotal.inc({ guard }, 0);
  }

  /** This process checks `proof`s as `guard`, refusing them for any of `reasons`. */
  checksProofs(guard: string, proof: string, reasons: readonly string[]): void {
    for (const reason of reasons) this.proofRejectedTotal.inc({ guard, proof, reason }, 0);
  }

  fencedOut(fields: {
    resource: FencedResource;
    resourceId: string;
    presentedToken: bigint;
    highestToken: bigint | null;
    ownerId: string;
    /** Given explicitly where the route runs without the request logger context. */
    traceId?: string;
  }): void {
    this.fencedOutTotal.inc({ resource: fields.resource });
    const presented = fields.presentedToken.toString();
    this.emit(
      'fenced_out',
      'stale fencing token rejected',
      {
        ...fields,
        presentedToken: presented,
        highestToken: fields.highestToken?.toString() ?? null,
      },
      // The same stale holder retrying the same resource counts on one record.
      [fields.resource, fields.resourceId, fields.ownerId, presented],
    );
  }

  railAmbiguous(fields: Record<string, unknown>): void {
    this.railAmbiguousTotal.inc();
    this.emit('rail_ambiguous', 'rail outcome unknown; payout quarantined', fields);
  }

  duplicateSubmission(fields: Record<string, unknown>): void {
    this.duplicateAttemptedTotal.inc();
    this.emit(
      'duplicate_rail_submission_attempted',
      'second submission for a payout refused',
      fields,
      [fields.payoutId, fields.ownerId, fields.presentedToken],
    );
  }

  sessionLost(fields: Record<string, unknown>): void {
    this.sessionLostTotal.inc();
    this.emit('session_lost', 'lock session lost', fields);
  }

  lockRevoked(fields: Record<string, unknown>): void {
    this.revocationsTotal.inc();
    this.emit('lock_revoked', 'lock force-revoked by an operator', fields);
  }

  invalidTransition(fields: Record<string, unknown>): void {
    this.invalidTransitionTotal.inc();
    this.emit('invalid_transition', 'payout transition rejected', fields, [
      fields.payoutId,
      fields.payoutEvent,
      fields.actor,
    ]);
  }

  tokenRegression(fields: { guard: string } & Record<string, unknown>): void {
    this.tokenRegressionTotal.inc({ guard: fields.guard });
    this.emit('token_regression', 'token regression observed', fields);
  }

  /**
   * A fence point refused a request whose signed grant or payout instruction
   * is missing, forged or about something else (docs/security.md): someone
   * claimed what they do not hold. Nothing was written.
   */
  proofRejected(
    fields: { guard: string; proof: string; reason: string } & Record<string, unknown>,
  ): void {
    this.proofRejectedTotal.inc({
      guard: fields.guard,
      proof: fields.proof,
      reason: fields.reason,
    });
    // Whatever payout each names: one caller's garbage proofs are one record (docs/operations.md).
    this.emit('proof_rejected', 'request refused: its proof does not hold', fields, [
      fields.guard,
      fields.proof,
      fields.reason,
      fields.ownerId,
    ]);
  }

  /** Call once per payout and finding: the counter is "how many payouts", not "how many looks". */
  railSweepFinding(finding: RailSweepFinding, fields: Record<string, unknown>): void {
    this.railSweepFindingsTotal.inc({ finding });
    this.emit(finding, 'the rail disagrees with a terminal payout; a human must decide', fields);
  }

  /**
   * `coalesceBy`: for a refusal a caller can repeat at will, the fields that
   * make two of them the same refusal; the feed then counts repeats on one
   * record. The log and the counters still see every one.
   */
  private emit(
    event: SafetyEventName,
    message: string,
    fields: Record<string, unknown>,
    coalesceBy?: unknown[],
  ): void {
    const safe = Object.fromEntries(
      Object.entries(fields).map(([k, v]) => [k, typeof v === 'bigint' ? v.toString() : v]),
    );
    // The event's name wins over a field of the same name: it is what operators search for.
    this.logger.warn({ ...safe, event }, message);
    const key =
      coalesceBy === undefined
        ? undefined
        : JSON.stringify(coalesceBy.map((v) => (typeof v === 'bigint' ? v.toString() : v)));
    this.feed.append(event, safe, key);
  }
}
