import { Module } from '@nestjs/common';
import { policyFile } from '@dlock/identity';
import { CONSOLE_CONFIG, type ConsoleConfig } from '../config';
import { SessionController } from './http/session.controller';
import { PersonRights } from './service/person-rights.service';
import { PersonVerifier } from './service/person-verifier.service';
import { SessionStore } from './service/session-store.service';

/** Signing people in and out; the store and the rights the other features check. */
@Module({
  controllers: [SessionController],
  providers: [
    {
      provide: SessionStore,
      inject: [CONSOLE_CONFIG],
      useFactory: (config: ConsoleConfig) =>
        new SessionStore({
          max: config.CONSOLE_SESSIONS_MAX,
          perSubjectMax: config.CONSOLE_SESSIONS_PER_SUBJECT_MAX,
          maxAgeMs: config.CONSOLE_SESSION_MAX_MS,
        }),
    },
    {
      // Read and checked at boot: a bad policy stops the console like any other bad setting.
      provide: PersonRights,
      inject: [CONSOLE_CONFIG],
      useFactory: (config: ConsoleConfig) => new PersonRights(policyFile(config.AUTH_POLICY)),
    },
    {
      provide: PersonVerifier,
      inject: [CONSOLE_CONFIG, SessionStore],
      useFactory: (config: ConsoleConfig, sessions: SessionStore) =>
        new PersonVerifier(config, sessions),
    },
  ],
  exports: [SessionStore, PersonVerifier, PersonRights],
})
export class SessionsModule {}
