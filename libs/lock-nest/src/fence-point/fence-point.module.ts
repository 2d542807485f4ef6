import { Module, type DynamicModule } from '@nestjs/common';
import { FENCE_POINT_PATH, fencePointController } from './fence-point.controller';
import {
  ConfigurableFencePointModule,
  FENCE_POINT_ASYNC_OPTIONS_TYPE,
  FENCE_POINT_OPTIONS_TYPE,
  type FencePointRoute,
} from './fence-point.options';
import { FencePointService } from './fence-point.service';

function withRoute(module: DynamicModule, route: FencePointRoute | undefined): DynamicModule {
  const decorators = route?.decorators ?? [];
  if (decorators === false) return module;
  const controller = fencePointController(route?.path ?? FENCE_POINT_PATH, decorators);
  return { ...module, controllers: [...(module.controllers ?? []), controller] };
}

/**
 * Makes the app a fence point (docs/extending.md, "Fenced by a revoke"):
 * `POST /v1/revocation-notices` takes the revocation notice the lock-server
 * presents before its revoke answers, checks it offline against the
 * lock-server's keys, and raises the memory its `floors` name. Also
 * `FencePointService`, for an app that presents notices on routes of its own.
 * `forRoot(options)` or `forRootAsync({ imports, inject, useFactory, route })`.
 */
@Module({
  providers: [FencePointService],
  exports: [FencePointService],
})
export class FencePointModule extends ConfigurableFencePointModule {
  static forRoot(options: typeof FENCE_POINT_OPTIONS_TYPE): DynamicModule {
    return withRoute(super.forRoot(options), options.route);
  }

  static forRootAsync(options: typeof FENCE_POINT_ASYNC_OPTIONS_TYPE): DynamicModule {
    return withRoute(super.forRootAsync(options), options.route);
  }
}
