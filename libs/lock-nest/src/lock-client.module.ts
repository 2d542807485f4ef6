import { Logger, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { LockClient, type LockClientEvents } from '@dlock/lock-client';
import { SafetyEvents } from '@dlock/observability';
import {
  ConfigurableLockClientModule,
  LOCK_CLIENT_MODULE_OPTIONS,
  type LockClientModuleOptions,
} from './lock-client.options';
import { LockSessionHealthIndicator } from './lock-session.health';
import { LockSessionKeeper } from './lock-session.keeper';
import { nestLockClientLogger } from './nest-logger';

function createLockClient(options: LockClientModuleOptions, safety?: SafetyEvents): LockClient {
  // The one place session_lost is logged and counted (lock_session_lost_total), as before.
  const events: LockClientEvents | undefined =
    options.events ?? (safety && { onSafetyEvent: (_event, fields) => safety.sessionLost(fields) });
  const { openAtBootstrap: _keeperOnly, ...sdkOptions } = options;
  return new LockClient({
    ...sdkOptions,
    logger: options.logger ?? nestLockClientLogger(new Logger('lock-client')),
    events,
  });
}

/**
 * `LockClientModule.forRoot(options)` or `.forRootAsync({ imports, inject,
 * useFactory })` (e.g. from ConfigService): provides the SDK's `LockClient`,
 * the process's one `LockSessionKeeper` (with `withLock`) and a Terminus
 * `LockSessionHealthIndicator`. Global unless `isGlobal: false`.
 * See docs/extending.md.
 */
@Module({
  imports: [TerminusModule],
  providers: [
    {
      provide: LockClient,
      useFactory: createLockClient,
      inject: [LOCK_CLIENT_MODULE_OPTIONS, { token: SafetyEvents, optional: true }],
    },
    LockSessionKeeper,
    LockSessionHealthIndicator,
  ],
  exports: [LockClient, LockSessionKeeper, LockSessionHealthIndicator],
})
export class LockClientModule extends ConfigurableLockClientModule {}
