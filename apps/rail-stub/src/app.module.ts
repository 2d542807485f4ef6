import { Module, RequestMethod, type DynamicModule } from '@nestjs/common';
import { AppConfigModule, type AppConfigOptions } from '@dlock/config';
import { AlwaysReady, HealthModule, ObservabilityModule } from '@dlock/observability';
import { RAIL_STUB_CONFIG, readRailStubConfig } from './config';
import { RailModule } from './rail/rail.module';

/** The rail stub as one importable module, around its validated config. */
@Module({})
export class RailStubModule {
  static async forRoot(options: AppConfigOptions = {}): Promise<DynamicModule> {
    const { module: config, config: values } = await AppConfigModule.forRoot(
      RAIL_STUB_CONFIG,
      readRailStubConfig,
      options,
    );
    return {
      module: RailStubModule,
      imports: [
        config,
        ObservabilityModule.forRoot({
          app: 'rail-stub',
          logLevel: values.LOG_LEVEL,
          untracedRoutes: [{ path: 'submit', method: RequestMethod.POST }],
          safetyEventFeed: false,
        }),
        HealthModule.register(AlwaysReady),
        RailModule,
      ],
    };
  }
}
