import { Module } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { APP_FILTER } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { fileTokenProvider } from '@dlock/identity';
import {
  DlockExceptionFilter,
  FencePointModule,
  LockClientModule,
  SafetyEvents,
} from '@dlock/lock-nest';
import { TableFenceFloors } from '@dlock/persistence';
import { HealthController } from './health.controller';
import { MetricsController } from './metrics.controller';
import { RefundController } from './refund.controller';
import { RefundSender } from './refund-sender.service';
import { registerRefundErrorCodes } from './refund-errors';
import { registerRefundSafetyEvents } from './refund-safety-events';
import { MemoryRefundSink, RefundSink } from './refund-sink';

// The example's own error codes and safety events, known before any request can need one and
// before SafetyEvents is built, so its counter starts at 0 (docs/extending.md).
registerRefundErrorCodes();
registerRefundSafetyEvents();

/** The feature module: what a team adds for its own bounded context. */
@Module({
  controllers: [RefundController],
  providers: [
    RefundSender,
    // The payment network: the in-memory fake here; a team binds its own client.
    { provide: RefundSink, useClass: MemoryRefundSink },
    // Counts on prom-client's default registry, one line each on Nest's console logger.
    { provide: SafetyEvents, useFactory: () => new SafetyEvents() },
  ],
  exports: [RefundSender],
})
export class RefundModule {}

/** The app's root: configuration, its database, the lock client, the feature (docs/extending.md). */
@Module({
  imports: [
    // From the process environment only: a stray .env file never changes a run.
    ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true }),
    TypeOrmModule.forRootAsync({
      inject: [ConfigService],
      useFactory: (config: ConfigService) => ({
        type: 'postgres',
        url: config.getOrThrow<string>('REFUNDS_DATABASE_URL'),
        // The schema is the migrations' (src/data-source.ts), run by the deployer.
        synchronize: false,
        migrationsRun: false,
        entities: [],
        logging: ['error'],
      }),
    }),
    LockClientModule.forRootAsync({
      imports: [ConfigModule],
      inject: [ConfigService],
      useFactory: (config: ConfigService) => ({
        baseUrl: config.getOrThrow<string>('LOCK_SERVER_URL'),
        ownerId: config.getOrThrow<string>('OWNER_ID'),
        token: fileTokenProvider(config.getOrThrow<string>('AUTH_TOKEN_DIR'), 'lock-server'),
        safetyMargin: 0.3,
        sessionTtlMs: 15_000,
        lockTtlMs: 15_000,
        // Open the session while the app boots: its first readiness probe already answers 200.
        openAtBootstrap: true,
      }),
    }),
    // A fence point of refund: keys (docs/extending.md, "Fenced by a revoke"): a revoke of
    // refund:{id} raises that row's fence before it answers, on the lock-server's signed notice.
    FencePointModule.forRootAsync({
      inject: [ConfigService, DataSource],
      useFactory: (config: ConfigService, db: DataSource) => ({
        // The lock-server's revocation keys (its GRANT_JWKS): a mounted file, or its URL.
        jwks: config.getOrThrow<string>('LOCK_SERVER_JWKS'),
        floors: [new TableFenceFloors(db.manager, { prefix: 'refund:', table: 'refund' })],
      }),
    }),
    TerminusModule,
    RefundModule,
  ],
  controllers: [HealthController, MetricsController],
  // Every DlockError a controller lets through answers as a dlock service would.
  providers: [{ provide: APP_FILTER, useClass: DlockExceptionFilter }],
})
export class RefundSenderAppModule {}
