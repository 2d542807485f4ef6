import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { LockClientOptions } from '@dlock/lock-client';

/**
 * The SDK's options as they are (docs/lock-client.md), plus when to open the
 * session. `logger` and `events` may be left out: the module logs through
 * Nest's Logger and reports session loss to whatever the app provides as
 * LOCK_CLIENT_EVENTS (the project's ObservabilityModule does: lock_session_lost_total,
 * event=session_lost).
 */
export interface LockClientModuleOptions extends LockClientOptions {
  /**
   * Open the session while the app boots instead of at first use. A
   * lock-server that is down at boot does not stop the app: the next
   * `session()` or `withLock()` tries again, and fails closed until it works.
   */
  openAtBootstrap?: boolean;
}

export const {
  ConfigurableModuleClass: ConfigurableLockClientModule,
  MODULE_OPTIONS_TOKEN: LOCK_CLIENT_MODULE_OPTIONS,
} = new ConfigurableModuleBuilder<LockClientModuleOptions>()
  .setClassMethodName('forRoot')
  // Global by default: one session per process, whichever feature module asks for it.
  .setExtras({ isGlobal: true }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
  }))
  .build();

/**
 * Where session loss is reported when the options give no `events`: an
 * optional provider of `LockClientEvents`. A token rather than the project's
 * SafetyEvents class, so the published package needs nothing of the project's
 * observability (docs/extending.md).
 */
export const LOCK_CLIENT_EVENTS = Symbol('LOCK_CLIENT_EVENTS');
