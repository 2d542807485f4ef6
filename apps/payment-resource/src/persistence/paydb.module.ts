import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { closeDataSource, initializeInBackground } from '@dlock/persistence';
import { PAYMENT_CONFIG, type PaymentConfig } from '../config';
import { paydbDataSource } from './data-source';

/** The paydb pool every bounded context of the app writes through; closed at shutdown. */
@Module({
  providers: [
    {
      provide: DataSource,
      inject: [PAYMENT_CONFIG],
      // With paydb down at boot the service listens unready, answers 503 and keeps connecting.
      useFactory: (config: PaymentConfig) =>
        initializeInBackground(
          paydbDataSource({
            url: config.PAYDB_URL,
            poolMax: config.PAYDB_POOL_MAX,
            statementTimeoutMs: config.PAYDB_STATEMENT_TIMEOUT_MS,
          }),
          { database: 'paydb' },
        ),
    },
  ],
  exports: [DataSource],
})
export class PaydbModule implements OnApplicationShutdown {
  constructor(@Inject(DataSource) private readonly dataSource: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    await closeDataSource(this.dataSource);
  }
}
