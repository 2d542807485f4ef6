import { fileTokenProvider, registerOperations as registerPolicyOperations } from '@dlock/identity';
import { Module, type DynamicModule } from '@nestjs/common';
import { AppConfigModule, type AppConfigOptions } from '@dlock/config';
import { LockClientModule } from '@dlock/lock-nest';
import { HealthModule, ObservabilityModule } from '@dlock/observability';
import { PAYOUT_OPERATIONS } from '@dlock/payout-contract';
import { RECONCILER_CONFIG, readReconcilerConfig } from './config';
import { PassesModule } from './passes/passes.module';
import { DatabasesModule } from './persistence/databases.module';
import { ReconcilerReadiness } from './persistence/readiness';

// Every dlock app reads the one policy file, which grants the payout operations too: known
// before any policy is read (docs/security.md, "Authorisation policy").
registerPolicyOperations(PAYOUT_OPERATIONS);

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
        LockClientModule.forRoot({
          baseUrl: config.LOCK_SERVER_URL,
          ownerId: config.OWNER_ID,
          token: fileTokenProvider(config.AUTH_TOKEN_DIR, 'lock-server'),
          safetyMargin: config.LOCK_CLIENT_SAFETY_MARGIN,
          sessionTtlMs: config.LOCK_SESSION_TTL_MS,
          lockTtlMs: config.LOCK_DEFAULT_TTL_MS,
        }),
        PassesModule,
      ],
    };
  }
}
