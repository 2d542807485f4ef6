import type { MigrationInterface, QueryRunner } from 'typeorm';
import { PAYOUT_AUDIT_CHAINS } from '@dlock/payout-contract/audit-chains';
import { addChain, addSeal, appendLinkSql, dropChains } from '../audit-chain';

const [TRANSITIONS, LEDGER] = PAYOUT_AUDIT_CHAINS.paydb;

/**
 * `payout_transition` and `ledger_entry` become hash chains (docs/audit.md),
 * one per payout and one per account: an edited, removed or slipped-in row is found by
 * `npm run audit:verify` even when the append-only triggers were bypassed.
 * Existing rows are chained in the order they were written.
 */
export class RecordsChained1796313600000 implements MigrationInterface {
  name = 'RecordsChained1796313600000';

  async up(q: QueryRunner): Promise<void> {
    await addChain(q, TRANSITIONS, 'payout_transition_append_only');
    await addChain(q, LEDGER, 'ledger_entry_append_only');
    await addSeal(
      q,
      'payout_transition',
      'INSERT',
      `${appendLinkSql(TRANSITIONS)}\n    RETURN NEW;`,
    );
    await addSeal(q, 'ledger_entry', 'INSERT', `${appendLinkSql(LEDGER)}\n    RETURN NEW;`);
  }

  async down(q: QueryRunner): Promise<void> {
    await dropChains(q, 'ledger_entry', [LEDGER]);
    await dropChains(q, 'payout_transition', [TRANSITIONS]);
  }
}
