import { Module } from '@nestjs/common';
import { CONSOLE_CONFIG, type ConsoleConfig } from '../config';
import { SessionsModule } from '../sessions/sessions.module';
import { EventsController } from './http/events.controller';
import { EventFeed } from './service/event-feed.service';
import { SafetyEventPoller } from './service/safety-event-poller.loop';

/** The safety feed: the services' events, polled and streamed to every open page. */
@Module({
  imports: [SessionsModule],
  controllers: [EventsController],
  providers: [
    {
      provide: EventFeed,
      inject: [CONSOLE_CONFIG],
      useFactory: (config: ConsoleConfig) =>
        new EventFeed(config.CONSOLE_EVENT_BUFFER, {
          listenersMax: config.CONSOLE_SSE_CLIENTS_MAX,
          perSubjectMax: config.CONSOLE_SSE_CLIENTS_PER_SUBJECT_MAX,
        }),
    },
    SafetyEventPoller,
  ],
})
export class EventsModule {}
