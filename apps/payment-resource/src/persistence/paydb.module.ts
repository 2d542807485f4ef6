import { Module } from '@nestjs/common';
import { DatabaseModule } from '@dlock/persistence';
import { PAYMENT_CONFIG, type PaymentConfig } from '../config';
import { paydbSettings } from './paydb-data-source.factory';

// With paydb down at boot the service listens unready, answers 503 and keeps connecting.
const paydb = DatabaseModule.forRootAsync({
  inject: [PAYMENT_CONFIG],
  useFactory: (config: PaymentConfig) =>
    paydbSettings({
      url: config.PAYDB_URL,
      poolMax: config.PAYDB_POOL_MAX,
      statementTimeoutMs: config.PAYDB_STATEMENT_TIMEOUT_MS,
    }),
});

/** The paydb pool every bounded context of the app writes through (DatabaseModule); closed at shutdown. */
@Module({ imports: [paydb], exports: [paydb] })
export class PaydbModule {}
