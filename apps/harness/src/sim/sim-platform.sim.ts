import { Global, Module, type DynamicModule, type InjectionToken } from '@nestjs/common';

@Global()
@Module({})
class SimPlatform {}

/**
 * What an app's root module gives its feature modules (config, safety events,
 * the database), as given values, global: a guard's real feature module runs
 * on it in the simulation without the app's own boot.
 */
export function simPlatform(values: [token: InjectionToken, value: unknown][]): DynamicModule {
  return {
    module: SimPlatform,
    providers: values.map(([provide, useValue]) => ({ provide, useValue })),
    exports: values.map(([token]) => token),
  };
}
