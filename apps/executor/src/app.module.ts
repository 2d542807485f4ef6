import { Module, type DynamicModule } from '@nestjs/common';
import { AppConfigModule, type AppConfigOptions } from '@dlock/config';
import { LockClientModule } from '@dlock/lock-nest';
import { HealthModule, ObservabilityModule, registerSafetyEvents } from '@dlock/observability';
import {
  lockClientOptions,
  PAYOUT_SAFETY_EVENTS,
  registerPayoutVocabulary,
} from '@dlock/payout-contract';
import { EXECUTOR_CONFIG, readExecutorConfig } from './config';
import { PollingModule } from './polling/polling.module';
import { LockSessionReadiness } from './lock-session.readiness';

// The payout operations (every dlock app reads the one policy file that grants them) and error
// codes: known before any policy is read or route declared (docs/extending.md).
registerPayoutVocabulary();
// Their safety events, counted from 0 by SafetyEvents (docs/operations.md, "Safety events").
registerSafetyEvents(PAYOUT_SAFETY_EVENTS);

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
        LockClientModule.forRoot(lockClientOptions(values)),
        HealthModule.register(LockSessionReadiness),
        PollingModule,
      ],
    };
  }
}
