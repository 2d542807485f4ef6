import { fileTokenProvider } from '@dlock/identity';
import { Module, type DynamicModule } from '@nestjs/common';
import { LockClientModule } from '@dlock/lock-nest';
import { HealthModule, ObservabilityModule } from '@dlock/observability';
import { PaymentResourceClient, RailProxyClient } from '@dlock/payout-contract';
import { EXECUTOR_CONFIG, type ExecutorConfig } from './config';
import { submitReadTimeoutMs, SUBMIT_CONNECT_TIMEOUT_MS } from './execution/lease';
import { AttemptHooks, NoAttemptHooks } from './execution/attempt-hooks';
import { PayoutExecutionService } from './execution/payout-execution.service';
import { HarnessAttemptHooks } from './harness/harness-attempt-hooks';
import { ExecutorMetrics } from './metrics';
import { PayoutPollingLoop } from './polling/payout-polling.loop';
import { LockSessionReadiness } from './readiness';

/** The frozen config, visible to every module of the app. */
@Module({})
class ConfigModule {
  static forRoot(config: ExecutorConfig): DynamicModule {
    return {
      module: ConfigModule,
      global: true,
      providers: [{ provide: EXECUTOR_CONFIG, useValue: config }],
      exports: [EXECUTOR_CONFIG],
    };
  }
}

@Module({})
export class ExecutorModule {
  static forRoot(config: ExecutorConfig): DynamicModule {
    return {
      module: ExecutorModule,
      imports: [
        ObservabilityModule.forRoot({ app: 'executor', logLevel: config.LOG_LEVEL }),
        ConfigModule.forRoot(config),
        // The one session, shared by the loop and the readiness check; closed at shutdown.
        LockClientModule.forRoot({
          baseUrl: config.LOCK_SERVER_URL,
          ownerId: config.OWNER_ID,
          token: fileTokenProvider(config.AUTH_TOKEN_DIR, 'lock-server'),
          safetyMargin: config.LOCK_CLIENT_SAFETY_MARGIN,
          sessionTtlMs: config.LOCK_SESSION_TTL_MS,
          lockTtlMs: config.LOCK_DEFAULT_TTL_MS,
        }),
        HealthModule.register(LockSessionReadiness),
      ],
      providers: [
        ExecutorMetrics,
        {
          provide: PaymentResourceClient,
          useFactory: () =>
            new PaymentResourceClient(
              config.PAYMENT_RESOURCE_URL,
              config.OWNER_ID,
              fileTokenProvider(config.AUTH_TOKEN_DIR, 'payment-resource'),
            ),
        },
        {
          provide: RailProxyClient,
          useFactory: () =>
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
          useFactory: () =>
            config.DLOCK_HARNESS ? HarnessAttemptHooks.fromConfig(config) : new NoAttemptHooks(),
        },
        PayoutExecutionService,
        PayoutPollingLoop,
      ],
    };
  }
}
