import { Logger, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { LockClient, type LockClientEvents } from '@dlock/lock-client';
import {
  ConfigurableLockClientModule,
  LOCK_CLIENT_EVENTS,
  LOCK_CLIENT_MODULE_OPTIONS,
  type LockClientModuleOptions,
} from './lock-client.options';
import { LockSessionHealthIndicator } from './lock-session.health';
import { LockSessionKeeper } from './lock-session.keeper';
import { nestLockClientLogger } from './nest-logger';

function createLockClient(
  options: LockClientModuleOptions,
  provided?: LockClientEvents,
): LockClient {
  // In the project's apps, ObservabilityModule provides it: session_lost logged and counted once.
  const events = options.events ?? provided;
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
      inject: [LOCK_CLIENT_MODULE_OPTIONS, { token: LOCK_CLIENT_EVENTS, optional: true }],
    },
    LockSessionKeeper,
    LockSessionHealthIndicator,
  ],
  exports: [LockClient, LockSessionKeeper, LockSessionHealthIndicator],
})
export class LockClientModule extends ConfigurableLockClientModule {}
