import { Module, type DynamicModule } from '@nestjs/common';
import { AppConfigModule, type AppConfigOptions } from '@dlock/config';
import { AlwaysReady, HealthModule, ObservabilityModule } from '@dlock/observability';
import { ConsolePeers } from './clients/console-peers';
import { CONSOLE_CONFIG, readConsoleConfig } from './config';
import { ConsoleController } from './http/console.controller';
import { SessionController } from './http/session.controller';
import { PersonVerifier } from './auth/person-verifier';
import { SessionStore } from './auth/sessions';
import { PendingRevocations } from './service/revocation-requests';
import { ActionsService } from './service/actions.service';
import { EventFeed } from './service/event-feed';
import { OverviewService } from './service/overview.service';
import { SafetyEventPoller } from './service/safety-event-poller';

/** The console as one importable module, around its validated config. */
@Module({})
export class ConsoleModule {
  static async forRoot(options: AppConfigOptions = {}): Promise<DynamicModule> {
    const { module: configModule, config } = await AppConfigModule.forRoot(
      CONSOLE_CONFIG,
      readConsoleConfig,
      options,
    );
    const sessions = new SessionStore(config.CONSOLE_SESSIONS_MAX, config.CONSOLE_SESSION_MAX_MS);
    return {
      module: ConsoleModule,
      imports: [
        configModule,
        ObservabilityModule.forRoot({ app: 'console', logLevel: config.LOG_LEVEL }),
        HealthModule.register(AlwaysReady),
      ],
      controllers: [ConsoleController, SessionController],
      providers: [
        { provide: ConsolePeers, useValue: new ConsolePeers(config) },
        { provide: SessionStore, useValue: sessions },
        { provide: PersonVerifier, useValue: new PersonVerifier(config, sessions) },
        { provide: PendingRevocations, useValue: new PendingRevocations() },
        {
          provide: EventFeed,
          useValue: new EventFeed(config.CONSOLE_EVENT_BUFFER, config.CONSOLE_SSE_CLIENTS_MAX),
        },
        OverviewService,
        ActionsService,
        SafetyEventPoller,
      ],
    };
  }
}
