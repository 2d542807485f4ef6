import type { MigrationInterface, QueryRunner } from 'typeorm';
import { LOCK_AUDIT_CHAINS } from '@dlock/persistence/audit';
import { addChain, addSeal, appendLinkSql, dropChains } from '../audit-chain';

const [REVOCATIONS] = LOCK_AUDIT_CHAINS;

/**
 * `lock_revocation` becomes a hash chain (docs/audit.md): an edited, removed
 * or slipped-in revocation is found by `npm run audit:verify` even when the
 * append-only trigger was bypassed. Existing rows are chained in revocation order.
 */
export class RevocationsChained1796313600000 implements MigrationInterface {
  name = 'RevocationsChained1796313600000';

  async up(q: QueryRunner): Promise<void> {
    await addChain(q, REVOCATIONS, 'lock_revocation_append_only');
    await addSeal(q, 'lock_revocation', 'INSERT', `${appendLinkSql(REVOCATIONS)}\n    RETURN NEW;`);
  }

  async down(q: QueryRunner): Promise<void> {
    await dropChains(q, 'lock_revocation', [REVOCATIONS]);
  }
}
