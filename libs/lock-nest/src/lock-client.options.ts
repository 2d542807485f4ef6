import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { LockClientOptions } from '@dlock/lock-client';

/**
 * The SDK's options as they are (docs/lock-client.md), plus when to open the
 * session. `logger` and `events` may be left out: the module logs through
 * Nest's Logger and reports session loss to `SafetyEvents` when the app has
 * `ObservabilityModule` (lock_session_lost_total, event=session_lost).
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
