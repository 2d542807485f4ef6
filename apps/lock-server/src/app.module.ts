import { Module, RequestMethod, type DynamicModule } from '@nestjs/common';
import type { RouteInfo } from '@nestjs/common/interfaces';
import { APP_GUARD } from '@nestjs/core';
import { AppConfigModule, type AppConfigOptions } from '@dlock/config';
import { DeadlineGuard, IdentityThrottlingModule } from '@dlock/http-contract';
import { HealthModule, ObservabilityModule } from '@dlock/observability';
import { LOCK_SERVER_CONFIG, readLockServerConfig } from './config';
import { LocksModule } from './locks/locks.module';
import { RevocationsModule } from './revocations/revocations.module';
import { SessionsModule } from './sessions/sessions.module';
import { LockBackendReadiness } from './lock-backend.readiness';
import { StoreModule } from './locks/persistence/store.factory';

/** The per-grant path: acquire, renew, release, heartbeat (see ObservabilityOptions.untracedRoutes). */
const HOT_ROUTES: RouteInfo[] = [
  { path: 'v1/locks/:key/acquire', method: RequestMethod.POST },
  { path: 'v1/locks/:key/renew', method: RequestMethod.POST },
  { path: 'v1/locks/:key', method: RequestMethod.DELETE },
  { path: 'v1/sessions/:sessionId/heartbeat', method: RequestMethod.POST },
];

/** Below this much of the caller's budget a request is refused before any statement runs. */
export const LOCK_DEADLINE_MIN_MS = 50;

/**
 * The lock-server as one importable module: its validated config, the
 * backend LOCK_BACKEND names (StoreModule), then locks, sessions and revocations.
 */
@Module({})
export class LockServerModule {
  static async forRoot(options: AppConfigOptions = {}): Promise<DynamicModule> {
    const { module: configModule, config } = await AppConfigModule.forRoot(
      LOCK_SERVER_CONFIG,
      readLockServerConfig,
      options,
    );
    const store = StoreModule.forRoot(config);
    return {
      module: LockServerModule,
      imports: [
        configModule,
        ObservabilityModule.forRoot({
          app: 'lock-server',
          logLevel: config.LOG_LEVEL,
          untracedRoutes: HOT_ROUTES,
        }),
        store,
        HealthModule.register(LockBackendReadiness, [store]),
        // Per caller identity, limits in config (LOCK_RATE_LIMIT, LOCK_RATE_WINDOW_MS).
        IdentityThrottlingModule.forRoot(config.LOCK_RATE_LIMIT, config.LOCK_RATE_WINDOW_MS),
        SessionsModule,
        LocksModule,
        RevocationsModule,
      ],
      providers: [
        // A caller with less than this left would not hear the answer (docs/lock-server.md).
        { provide: APP_GUARD, useValue: new DeadlineGuard(LOCK_DEADLINE_MIN_MS) },
      ],
    };
  }
}
