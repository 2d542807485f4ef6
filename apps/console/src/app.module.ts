import { registerPayoutVocabulary } from '@dlock/payout-contract';
import { Module, type DynamicModule } from '@nestjs/common';
import { AppConfigModule, type AppConfigOptions } from '@dlock/config';
import { AlwaysReady, HealthModule, ObservabilityModule } from '@dlock/observability';
import { ActionsModule } from './actions/actions.module';
import { CONSOLE_CONFIG, readConsoleConfig } from './config';
import { ConsolePeersModule } from './console-peers.client';
import { EventsModule } from './events/events.module';
import { OverviewModule } from './overview/overview.module';
import { SessionsModule } from './sessions/sessions.module';

// The payout operations (every dlock app reads the one policy file that grants them) and error
// codes: known before any policy is read or route declared (docs/extending.md).
registerPayoutVocabulary();

/** The console as one importable module: its validated config, then one module per page area. */
@Module({})
export class ConsoleModule {
  static async forRoot(options: AppConfigOptions = {}): Promise<DynamicModule> {
    const { module: config, config: values } = await AppConfigModule.forRoot(
      CONSOLE_CONFIG,
      readConsoleConfig,
      options,
    );
    return {
      module: ConsoleModule,
      imports: [
        config,
        ObservabilityModule.forRoot({ app: 'console', logLevel: values.LOG_LEVEL }),
        HealthModule.register(AlwaysReady),
        ConsolePeersModule,
        SessionsModule,
        OverviewModule,
        ActionsModule,
        EventsModule,
      ],
    };
  }
}
