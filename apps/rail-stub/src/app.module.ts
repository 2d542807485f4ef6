import { Module, RequestMethod, type DynamicModule } from '@nestjs/common';
import { AlwaysReady, HealthModule, ObservabilityModule } from '@dlock/observability';
import { AdminController } from './admin.controller';
import { RAIL_STUB_CONFIG, type RailStubConfig } from './config';
import { RailController } from './rail.controller';
import { RailStubService } from './rail.service';

@Module({})
export class RailStubModule {
  static forRoot(config: RailStubConfig): DynamicModule {
    return {
      module: RailStubModule,
      imports: [
        ObservabilityModule.forRoot({
          app: 'rail-stub',
          logLevel: config.LOG_LEVEL,
          untracedRoutes: [{ path: 'submit', method: RequestMethod.POST }],
          safetyEventFeed: false,
        }),
        HealthModule.register(AlwaysReady),
      ],
      controllers: [RailController, AdminController],
      providers: [{ provide: RAIL_STUB_CONFIG, useValue: config }, RailStubService],
    };
  }
}
