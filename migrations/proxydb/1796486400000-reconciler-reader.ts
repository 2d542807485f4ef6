import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantReader, revokeReader } from '../reconciler-reader';

/** `reconciler_ro` may read every table of proxydb and write none (migrations/reconciler-reader.ts). */
export class ReconcilerReader1796486400000 implements MigrationInterface {
  name = 'ReconcilerReader1796486400000';

  async up(q: QueryRunner): Promise<void> {
    await grantReader(q);
  }

  async down(q: QueryRunner): Promise<void> {
    await revokeReader(q);
  }
}
