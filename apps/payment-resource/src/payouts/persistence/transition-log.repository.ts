import { sqlRows } from '@dlock/persistence';
import { Injectable } from '@nestjs/common';
import type { PayoutState } from '@dlock/payout-contract';
import type { PayoutEvent } from '@dlock/payout-contract';
import { toBigintOrNull, type Db } from '../../persistence/paydb.sql';

export interface TransitionRecord {
  payoutId: string;
  from: PayoutState;
  to: PayoutState;
  event: PayoutEvent;
  /** The worker (X-Owner-Id) or the operator who caused it (FR-30). */
  actor: string;
  token: bigint | null;
  submissionId?: string | null;
  railReference?: string | null;
  reason?: string | null;
}

export interface RailRecord {
  event: PayoutEvent;
  submissionId: string | null;
  railReference: string | null;
  token: bigint | null;
  actor: string;
  recordedAt: Date;
}

const RAIL_EVENTS: PayoutEvent[] = [
  'RAIL_SUBMITTED',
  'RAIL_ACKED',
  'RAIL_REJECTED',
  'RAIL_AMBIGUOUS',
  'RESOLVE_ACKED',
  'RESOLVE_NOT_FOUND',
];

/**
 * The append-only audit of every applied transition (a trigger rejects UPDATE
 * and DELETE), written with the transition itself (transitionCtes).
 */
@Injectable()
export class TransitionLogRepository {
  /** What paydb knows of the payout's rail attempts: the outcomes recorded through P6 and P8. */
  async railRecords(db: Db, payoutId: string): Promise<RailRecord[]> {
    const rows: {
      event: PayoutEvent;
      submission_id: string | null;
      rail_reference: string | null;
      token: string | null;
      actor: string;
      created_at: Date;
    }[] = await sqlRows(
      db,
      `SELECT event, submission_id, rail_reference, token, actor, created_at FROM payout_transition
        WHERE payout_id = $1 AND event = ANY($2) ORDER BY transition_id`,
      [payoutId, RAIL_EVENTS],
    );
    return rows.map((r) => ({
      event: r.event,
      submissionId: r.submission_id,
      railReference: r.rail_reference,
      token: toBigintOrNull(r.token),
      actor: r.actor,
      recordedAt: r.created_at,
    }));
  }
}
