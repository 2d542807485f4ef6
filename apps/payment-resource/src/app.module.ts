import { Module, RequestMethod, type OnApplicationShutdown, type Type } from '@nestjs/common';
import type { RouteInfo } from '@nestjs/common/interfaces';
import { DataSource } from 'typeorm';
import { HealthModule, ObservabilityModule } from '@dlock/observability';
import { closeDataSource, initializeInBackground } from '@dlock/persistence';
import { PAYMENT_CONFIG, type PaymentConfig } from './config';
import { FenceFloorController } from './fence-floor/fence-floor.controller';
import { FenceFloorRepository } from './fence-floor/fence-floor.repository';
import { FenceFloorService } from './fence-floor/fence-floor.service';
import { AccountsController } from './http/accounts.controller';
import { CONSOLE_READS } from './http/console-reads.controller';
import { IntakeController } from './http/intake.controller';
import { PayoutsController } from './http/payouts.controller';
import { PaymentMetrics } from './metrics';
import { AccountRepository } from './persistence/account.repository';
import { paydbDataSource } from './persistence/data-source';
import { FenceRepository } from './persistence/fence.repository';
import { IdempotencyRepository } from './persistence/idempotency.repository';
import { IntakeRepository } from './persistence/intake.repository';
import { IntakeService } from './service/intake.service';
import { LedgerRepository } from './persistence/ledger.repository';
import { PayoutRepository } from './persistence/payout.repository';
import { PaydbReadiness } from './persistence/readiness';
import { TransitionLogRepository } from './persistence/transition-log.repository';
import { FencedWriter } from './service/fenced-writer';
import { PayoutCommands } from './service/payout-commands.service';
import { PayoutQueries } from './service/payout-queries.service';

/**
 * The executor's writes on every payout, served without the per-request logger
 * context (see ObservabilityOptions.untracedRoutes): their safety events and
 * errors carry `traceId` explicitly; payout_transition is their audit trail.
 */
const PER_PAYOUT_ROUTES: RouteInfo[] = [
  { path: 'v1/payouts/:payoutId/claim', method: RequestMethod.POST },
  { path: 'v1/payouts/:payoutId/rail-outcome', method: RequestMethod.POST },
  { path: 'v1/payouts/:payoutId/post', method: RequestMethod.POST },
];

const dataSourceProvider = {
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
};

/** Builds the app module around a configuration read once at boot. */
export function createAppModule(config: PaymentConfig): Type<unknown> {
  @Module({ providers: [{ provide: PAYMENT_CONFIG, useValue: config }], exports: [PAYMENT_CONFIG] })
  class ConfigModule {}

  @Module({
    imports: [ConfigModule],
    providers: [dataSourceProvider],
    exports: [DataSource],
  })
  class PaydbModule implements OnApplicationShutdown {
    constructor(private readonly dataSource: DataSource) {}
    async onApplicationShutdown(): Promise<void> {
      await closeDataSource(this.dataSource);
    }
  }

  @Module({
    imports: [
      ConfigModule,
      PaydbModule,
      ObservabilityModule.forRoot({
        app: 'payment-resource',
        logLevel: config.LOG_LEVEL,
        untracedRoutes: PER_PAYOUT_ROUTES,
      }),
      HealthModule.register(PaydbReadiness, [PaydbModule]),
    ],
    controllers: [
      ...CONSOLE_READS,
      PayoutsController,
      AccountsController,
      IntakeController,
      FenceFloorController,
    ],
    providers: [
      PaymentMetrics,
      FenceRepository,
      PayoutRepository,
      AccountRepository,
      LedgerRepository,
      IdempotencyRepository,
      IntakeRepository,
      IntakeService,
      TransitionLogRepository,
      FencedWriter,
      PayoutCommands,
      PayoutQueries,
      FenceFloorRepository,
      FenceFloorService,
    ],
  })
  class PaymentResourceModule {}

  return PaymentResourceModule;
}
