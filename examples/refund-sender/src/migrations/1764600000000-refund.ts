import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The example's own table. `fence` is the highest fencing token that wrote
 * the row (0: none yet); `sent_token` is the grant that recorded the intent
 * to send, so a later holder can tell whose delivery it has to check.
 */
export class RefundTable1764600000000 implements MigrationInterface {
  name = 'RefundTable1764600000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE refund (
        id text PRIMARY KEY CHECK (id ~ '^[a-z0-9-]{1,64}$'),
        amount_minor bigint NOT NULL CHECK (amount_minor > 0),
        status text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'SENDING', 'SENT')),
        fence bigint NOT NULL DEFAULT 0 CHECK (fence >= 0),
        sent_token bigint
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE refund`);
  }
}

export const REFUND_MIGRATIONS = [RefundTable1764600000000];
