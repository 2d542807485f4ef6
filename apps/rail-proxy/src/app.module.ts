import { Module, RequestMethod, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { initializeInBackground } from '@dlock/persistence';
import { HealthModule, ObservabilityModule } from '@dlock/observability';
import { RAIL_PROXY_CONFIG, type RailProxyConfig } from './config';
import { HighWaterFloorController } from './fence-floor/high-water-floor.controller';
import { HighWaterFloorRepository } from './fence-floor/high-water-floor.repository';
import { HighWaterFloorService } from './fence-floor/high-water-floor.service';
import { HighWaterListModule } from './high-water-list/high-water-list.controller';
import { IdempotencyRepository } from './idempotency.repository';
import { RailProxyMetrics } from './metrics';
import { RailClient } from './rail-client';
import { ProxydbReadiness } from './readiness';
import { SubmissionRepository } from './submission.repository';
import { SubmissionService } from './submission.service';
import { SubmissionsController } from './submissions.controller';

/** proxydb through TypeORM: raw SQL only, no entities, migrations run out of band. */
function database(config: RailProxyConfig): DynamicModule {
  return TypeOrmModule.forRootAsync({
    useFactory: () => ({
      type: 'postgres',
      url: config.PROXYDB_URL,
      synchronize: false,
      migrationsRun: false,
      entities: [],
      logging: ['error'],
      // Connected in the background (dataSourceFactory): with proxydb down at boot the proxy listens unready.
      manualInitialization: true,
      extra: {
        max: config.PROXYDB_POOL_MAX,
        connectionTimeoutMillis: 2_000,
        // A hung statement must not hold an account's high-water row forever.
        statement_timeout: 5_000,
        application_name: 'rail-proxy',
      },
    }),
    dataSourceFactory: async (options) =>
      initializeInBackground(new DataSource(options!), { database: 'proxydb' }),
  });
}

@Module({})
export class RailProxyModule {
  static forRoot(config: RailProxyConfig): DynamicModule {
    const db = database(config);
    return {
      module: RailProxyModule,
      imports: [
        ObservabilityModule.forRoot({
          app: 'rail-proxy',
          logLevel: config.LOG_LEVEL,
          // R1, once per payout: its log lines and safety events carry traceId explicitly.
          untracedRoutes: [{ path: 'v1/rail/submissions', method: RequestMethod.POST }],
        }),
        db,
        HealthModule.register(ProxydbReadiness),
        HighWaterListModule,
      ],
      controllers: [SubmissionsController, HighWaterFloorController],
      providers: [
        { provide: RAIL_PROXY_CONFIG, useValue: config },
        RailProxyMetrics,
        RailClient,
        SubmissionRepository,
        IdempotencyRepository,
        SubmissionService,
        HighWaterFloorRepository,
        HighWaterFloorService,
      ],
    };
  }
}
