import {
  PAYOUT_INSTRUCTION_HEADER,
  PAYOUT_SAFETY_EVENTS,
  registerPayoutVocabulary,
} from '@dlock/payout-contract';
import { Module, RequestMethod, type DynamicModule } from '@nestjs/common';
import { AppConfigModule, type AppConfigOptions } from '@dlock/config';
import { IdentityThrottlingModule, registerSingularHeaders } from '@dlock/http-contract';
import { DatabaseModule } from '@dlock/persistence';
import { HealthModule, ObservabilityModule, registerSafetyEvents } from '@dlock/observability';
import { RAIL_PROXY_CONFIG, readRailProxyConfig, type RailProxyConfig } from './config';
import { HighWaterModule } from './high-water/high-water.module';
import { ProxydbReadiness } from './proxydb.readiness';
import { SubmissionsModule } from './submission/submission.module';

// The payout operations (every dlock app reads the one policy file that grants them) and error
// codes: known before any policy is read or route declared (docs/extending.md).
registerPayoutVocabulary();
// Their safety events, counted from 0 by SafetyEvents (docs/operations.md, "Safety events").
registerSafetyEvents(PAYOUT_SAFETY_EVENTS);
// A submission carries one signed instruction: a repeated header is refused (docs/security.md).
registerSingularHeaders([PAYOUT_INSTRUCTION_HEADER]);

/** proxydb (global): raw SQL only, no entities, migrations run out of band (libs/persistence). */
const proxydb = DatabaseModule.forRootAsync({
  inject: [RAIL_PROXY_CONFIG],
  // With proxydb down at boot the proxy listens unready and keeps connecting.
  useFactory: (config: RailProxyConfig) => ({
    database: 'proxydb',
    url: config.PROXYDB_URL,
    applicationName: 'rail-proxy',
    poolMax: config.PROXYDB_POOL_MAX,
    connectTimeoutMs: 2_000,
    // A hung statement must not hold an account's high-water row forever.
    statementTimeoutMs: 5_000,
    logging: ['error'],
  }),
});

/** rail-proxy as one importable module: its validated config, proxydb, then one module per bounded context. */
@Module({})
export class RailProxyModule {
  static async forRoot(options: AppConfigOptions = {}): Promise<DynamicModule> {
    const { module: config, config: values } = await AppConfigModule.forRoot(
      RAIL_PROXY_CONFIG,
      readRailProxyConfig,
      options,
    );
    return {
      module: RailProxyModule,
      imports: [
        config,
        ObservabilityModule.forRoot({
          app: 'rail-proxy',
          logLevel: values.LOG_LEVEL,
          // R1, once per payout: its log lines and safety events carry traceId explicitly.
          untracedRoutes: [{ path: 'v1/rail/submissions', method: RequestMethod.POST }],
        }),
        proxydb,
        HealthModule.register(ProxydbReadiness),
        // Before any proof is checked or event recorded (docs/security.md, "Limits").
        IdentityThrottlingModule.forRoot(
          values.RAIL_PROXY_RATE_LIMIT,
          values.RAIL_PROXY_RATE_WINDOW_MS,
        ),
        SubmissionsModule,
        HighWaterModule,
      ],
    };
  }
}
