import { Module, type DynamicModule } from '@nestjs/common';
import { AlwaysReady, HealthModule, ObservabilityModule } from '@dlock/observability';
import { ConsolePeers } from './clients/console-peers';
import { CONSOLE_CONFIG, type ConsoleConfig } from './config';
import { ConsoleController } from './http/console.controller';
import { SessionController } from './http/session.controller';
import { PersonVerifier } from './auth/person-verifier';
import { SessionStore } from './auth/sessions';
import { PendingRevocations } from './service/revocation-requests';
import { ActionsService } from './service/actions.service';
import { EventFeed } from './service/event-feed';
import { OverviewService } from './service/overview.service';
import { SafetyEventPoller } from './service/safety-event-poller';

@Module({})
export class ConsoleModule {
  static forRoot(config: ConsoleConfig): DynamicModule {
    const sessions = new SessionStore(config.CONSOLE_SESSIONS_MAX, config.CONSOLE_SESSION_MAX_MS);
    return {
      module: ConsoleModule,
      imports: [
        ObservabilityModule.forRoot({ app: 'console', logLevel: config.LOG_LEVEL }),
        HealthModule.register(AlwaysReady),
      ],
      controllers: [ConsoleController, SessionController],
      providers: [
        { provide: CONSOLE_CONFIG, useValue: config },
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
