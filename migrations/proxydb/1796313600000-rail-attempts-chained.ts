import type { MigrationInterface, QueryRunner } from 'typeorm';
import { PAYOUT_AUDIT_CHAINS } from '@dlock/payout-contract/audit-chains';
import { addChain, addSeal, appendLinkSql, dropChains } from '../audit-chain';

const [INTENTS, OUTCOMES] = PAYOUT_AUDIT_CHAINS.proxydb;

/**
 * `rail_submission` is written twice by design: the intent before the rail
 * call, the outcome after it. So it carries two hash chains (docs/audit.md):
 * the intent chain over the columns the guard keeps immutable, appended on
 * INSERT, and the outcome chain over the outcome columns, appended when the
 * outcome is recorded (or at INSERT for a row born resolved, e.g. FENCED).
 * The chain columns themselves may never be changed by an UPDATE.
 */
export class RailAttemptsChained1796313600000 implements MigrationInterface {
  name = 'RailAttemptsChained1796313600000';

  async up(q: QueryRunner): Promise<void> {
    await addChain(q, INTENTS, 'rail_submission_guard');
    await addChain(q, OUTCOMES, 'rail_submission_guard');
    await addSeal(
      q,
      'rail_submission',
      'INSERT OR UPDATE',
      `
    IF TG_OP = 'INSERT' THEN
      ${appendLinkSql(INTENTS)}
      NEW.outcome_seq := NULL;
      NEW.outcome_hash := NULL;
    ELSIF (NEW.chain_seq, NEW.chain_hash, NEW.outcome_seq, NEW.outcome_hash)
          IS DISTINCT FROM (OLD.chain_seq, OLD.chain_hash, OLD.outcome_seq, OLD.outcome_hash) THEN
      RAISE EXCEPTION 'rail_submission % chain columns are immutable', OLD.submission_id
        USING ERRCODE = 'check_violation';
    END IF;
    -- The guard (which fires first) lets an UPDATE through only to record the outcome.
    IF NEW.outcome IS NOT NULL THEN
      ${appendLinkSql(OUTCOMES)}
    END IF;
    RETURN NEW;`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await dropChains(q, 'rail_submission', [INTENTS, OUTCOMES]);
  }
}
