import { Module, type DynamicModule } from '@nestjs/common';
import { AppConfigModule, type AppConfigOptions } from '@dlock/config';
import { LockClientModule } from '@dlock/lock-nest';
import { HealthModule, ObservabilityModule, registerSafetyEvents } from '@dlock/observability';
import { registerAuditChains } from '@dlock/persistence';
import {
  lockClientOptions,
  PAYOUT_SAFETY_EVENTS,
  registerPayoutVocabulary,
} from '@dlock/payout-contract';
import { PAYOUT_AUDIT_CHAIN_LIST } from '@dlock/payout-contract/audit-chains';
import { RECONCILER_CONFIG, readReconcilerConfig } from './config';
import { PassesModule } from './passes/passes.module';
import { DatabasesModule } from './persistence/databases.module';
import { ReconcilerReadiness } from './persistence/databases.readiness';

// The payout operations (every dlock app reads the one policy file that grants them) and error
// codes: known before any policy is read or route declared (docs/extending.md).
registerPayoutVocabulary();
// Their safety events, counted from 0 by SafetyEvents (docs/operations.md, "Safety events").
registerSafetyEvents(PAYOUT_SAFETY_EVENTS);
// The payout services' audit chains, verified beside the lock service's (docs/audit.md).
registerAuditChains(PAYOUT_AUDIT_CHAIN_LIST);

/** The reconciler as one importable module, around its validated config. */
@Module({})
export class ReconcilerModule {
  static async forRoot(options: AppConfigOptions = {}): Promise<DynamicModule> {
    const { module: configModule, config } = await AppConfigModule.forRoot(
      RECONCILER_CONFIG,
      readReconcilerConfig,
      options,
    );
    return {
      module: ReconcilerModule,
      imports: [
        configModule,
        ObservabilityModule.forRoot({ app: 'reconciler', logLevel: config.LOG_LEVEL }),
        HealthModule.register(ReconcilerReadiness, [DatabasesModule]),
        // One session, opened when first needed; failing to open it fails the pass closed.
        LockClientModule.forRoot(lockClientOptions(config)),
        PassesModule,
      ],
    };
  }
}
