import { fileTokenProvider } from '@dlock/identity';
import { Module, type DynamicModule } from '@nestjs/common';
import { AppConfigModule, type AppConfigOptions } from '@dlock/config';
import { LockClientModule } from '@dlock/lock-nest';
import { HealthModule, ObservabilityModule, registerSafetyEvents } from '@dlock/observability';
import {
  PAYOUT_SAFETY_EVENTS,
  registerPayoutVocabulary,
  PaymentResourceClient,
  RailProxyClient,
} from '@dlock/payout-contract';
import { EXECUTOR_CONFIG, readExecutorConfig, type ExecutorConfig } from './config';
import { submitReadTimeoutMs, SUBMIT_CONNECT_TIMEOUT_MS } from './execution/domain/lease';
import { AttemptHooks, NoAttemptHooks } from './execution/domain/attempt-hooks.port';
import { PayoutExecutionService } from './execution/service/payout-execution.service';
import { HarnessAttemptHooks } from './harness/harness-attempt-hooks';
import { ExecutorMetrics } from './metrics';
import { PayoutPollingLoop } from './polling/service/payout-polling.loop';
import { LockSessionReadiness } from './readiness';

// The payout operations (every dlock app reads the one policy file that grants them) and error
// codes: known before any policy is read or route declared (docs/extending.md).
registerPayoutVocabulary();
// Their safety events, counted from 0 by SafetyEvents (docs/operations.md, "Safety events").
registerSafetyEvents(PAYOUT_SAFETY_EVENTS);

/** Payout execution: the polling loop and one attempt per payout, through the two services' clients. */
@Module({
  providers: [
    ExecutorMetrics,
    {
      provide: PaymentResourceClient,
      inject: [EXECUTOR_CONFIG],
      useFactory: (config: ExecutorConfig) =>
        new PaymentResourceClient(
          config.PAYMENT_RESOURCE_URL,
          config.OWNER_ID,
          fileTokenProvider(config.AUTH_TOKEN_DIR, 'payment-resource'),
        ),
    },
    {
      provide: RailProxyClient,
      inject: [EXECUTOR_CONFIG],
      useFactory: (config: ExecutorConfig) =>
        new RailProxyClient(
          config.RAIL_PROXY_URL,
          config.OWNER_ID,
          {
            connectTimeoutMs: SUBMIT_CONNECT_TIMEOUT_MS,
            readTimeoutMs: submitReadTimeoutMs(config.RAIL_READ_TIMEOUT_MS),
          },
          fileTokenProvider(config.AUTH_TOKEN_DIR, 'rail-proxy'),
        ),
    },
    {
      // The harness's crash and pause points exist only under DLOCK_HARNESS=1.
      provide: AttemptHooks,
      inject: [EXECUTOR_CONFIG],
      useFactory: (config: ExecutorConfig) =>
        config.DLOCK_HARNESS ? HarnessAttemptHooks.fromConfig(config) : new NoAttemptHooks(),
    },
    PayoutExecutionService,
    PayoutPollingLoop,
  ],
})
export class PayoutExecutionModule {}

/** The executor as one importable module, around its validated config. */
@Module({})
export class ExecutorModule {
  static async forRoot(options: AppConfigOptions = {}): Promise<DynamicModule> {
    const { module: config, config: values } = await AppConfigModule.forRoot(
      EXECUTOR_CONFIG,
      readExecutorConfig,
      options,
    );
    return {
      module: ExecutorModule,
      imports: [
        config,
        ObservabilityModule.forRoot({ app: 'executor', logLevel: values.LOG_LEVEL }),
        // The one session, shared by the loop and the readiness check; closed at shutdown.
        LockClientModule.forRoot({
          baseUrl: values.LOCK_SERVER_URL,
          ownerId: values.OWNER_ID,
          token: fileTokenProvider(values.AUTH_TOKEN_DIR, 'lock-server'),
          safetyMargin: values.LOCK_CLIENT_SAFETY_MARGIN,
          sessionTtlMs: values.LOCK_SESSION_TTL_MS,
          lockTtlMs: values.LOCK_DEFAULT_TTL_MS,
        }),
        HealthModule.register(LockSessionReadiness),
        PayoutExecutionModule,
      ],
    };
  }
}
