import { Module, RequestMethod, type DynamicModule, type Type } from '@nestjs/common';
import type { RouteInfo } from '@nestjs/common/interfaces';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { DeadlineGuard } from '@dlock/http-contract';
import { HealthModule, ObservabilityModule } from '@dlock/observability';
import { LOCK_SERVER_CONFIG, type LockServerConfig } from './config';
import { LockService } from './core/lock.service';
import { SessionService } from './core/session.service';
import { IdentityThrottlerGuard } from './http/identity-throttler.guard';
import { LocksController } from './http/locks.controller';
import { LISTINGS } from './http/listings.controller';
import { RevocationsController } from './http/revocations.controller';
import { SessionsController } from './http/sessions.controller';
import { LockBackendReadiness } from './readiness';
import { StoreModule } from './store/store.factory';

/** The per-grant path: acquire, renew, release, heartbeat (see ObservabilityOptions.untracedRoutes). */
const HOT_ROUTES: RouteInfo[] = [
  { path: 'v1/locks/:key/acquire', method: RequestMethod.POST },
  { path: 'v1/locks/:key/renew', method: RequestMethod.POST },
  { path: 'v1/locks/:key', method: RequestMethod.DELETE },
  { path: 'v1/sessions/:sessionId/heartbeat', method: RequestMethod.POST },
];

/** Below this much of the caller's budget a request is refused before any statement runs. */
export const LOCK_DEADLINE_MIN_MS = 50;

@Module({})
export class LockServerModule {
  static forRoot(config: LockServerConfig): DynamicModule {
    const store = StoreModule.forRoot(config);
    const configProvider = { provide: LOCK_SERVER_CONFIG, useValue: config };
    return {
      module: LockServerModule,
      imports: [
        ObservabilityModule.forRoot({
          app: 'lock-server',
          logLevel: config.LOG_LEVEL,
          untracedRoutes: HOT_ROUTES,
        }),
        store,
        HealthModule.register(LockBackendReadiness, [store]),
        ThrottlerModule.forRoot({
          throttlers: [{ limit: config.LOCK_RATE_LIMIT, ttl: config.LOCK_RATE_WINDOW_MS }],
          setHeaders: false,
        }),
      ],
      controllers: [SessionsController, LocksController, RevocationsController, ...LISTINGS],
      providers: [
        configProvider,
        LockService,
        SessionService,
        // A caller with less than this left would not hear the answer (docs/lock-server.md).
        { provide: APP_GUARD, useValue: new DeadlineGuard(LOCK_DEADLINE_MIN_MS) },
        // Per caller identity, limits in config (LOCK_RATE_LIMIT, LOCK_RATE_WINDOW_MS).
        { provide: APP_GUARD, useClass: IdentityThrottlerGuard },
      ],
    };
  }
}

/** A root module class for the given config (serveHttpApp takes a class). */
export function lockServerAppModule(config: LockServerConfig): Type<unknown> {
  @Module({ imports: [LockServerModule.forRoot(config)] })
  class LockServerAppModule {}
  return LockServerAppModule;
}
