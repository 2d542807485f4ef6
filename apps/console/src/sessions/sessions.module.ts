import { Module } from '@nestjs/common';
import { CONSOLE_CONFIG, type ConsoleConfig } from '../config';
import { SessionController } from './http/session.controller';
import { PersonVerifier } from './service/person-verifier';
import { SessionStore } from './service/sessions';

/** Signing people in and out; the store the request guard and the event stream check. */
@Module({
  controllers: [SessionController],
  providers: [
    {
      provide: SessionStore,
      inject: [CONSOLE_CONFIG],
      useFactory: (config: ConsoleConfig) =>
        new SessionStore(config.CONSOLE_SESSIONS_MAX, config.CONSOLE_SESSION_MAX_MS),
    },
    {
      provide: PersonVerifier,
      inject: [CONSOLE_CONFIG, SessionStore],
      useFactory: (config: ConsoleConfig, sessions: SessionStore) =>
        new PersonVerifier(config, sessions),
    },
  ],
  exports: [SessionStore, PersonVerifier],
})
export class SessionsModule {}
