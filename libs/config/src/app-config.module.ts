import assert from 'node:assert';
import { Module, type DynamicModule, type InjectionToken } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import type { EnvSource } from './env-error';

export interface AppConfigOptions {
  /**
   * The whole environment, used instead of process.env and any `.env` file
   * (tests and embedders that build the config themselves).
   */
  env?: EnvSource;
}

/**
 * The `.env` file a local run reads, named by DLOCK_ENV_FILE; none when it is
 * unset, so a stray `.env` never changes a test, `npm start` or a pod.
 * Variables set in the environment win over the file (docs/operations.md, "Configuration").
 */
export function envFileOptions(source: EnvSource = process.env) {
  const file = source.DLOCK_ENV_FILE;
  return file ? { envFilePath: file } : { ignoreEnvFile: true };
}

/** Holds the app's validated config under its token, beside Nest's ConfigService; global. */
@Module({})
export class AppConfigModule {
  /**
   * Reads the environment through `@nestjs/config` (process.env, plus the
   * `.env` file of envFileOptions), validates it with `read` (which throws
   * EnvError naming every bad variable), and provides the result under `token`
   * and through ConfigService. The config is also returned: modules are wired from it.
   */
  static async forRoot<T extends object>(
    token: InjectionToken,
    read: (source: EnvSource) => T,
    options: AppConfigOptions = {},
  ): Promise<{ module: DynamicModule; config: T }> {
    let config: T | undefined;
    const { env } = options;
    if (env !== undefined) config = read(env);
    const configModule =
      config === undefined
        ? await ConfigModule.forRoot({
            ...envFileOptions(),
            cache: true,
            validate: (raw) => (config = read(raw as EnvSource)),
          })
        : // Given outright: nothing read from, nor written back to, process.env.
          await ConfigModule.forRoot({
            ignoreEnvFile: true,
            skipProcessEnv: true,
            validatePredefined: false,
            load: [() => ({ ...config })],
          });
    assert(config !== undefined, 'ConfigModule.forRoot validates synchronously');
    return {
      config,
      module: {
        module: AppConfigModule,
        global: true,
        imports: [configModule],
        providers: [{ provide: token, useValue: config }],
        exports: [token, configModule],
      },
    };
  }
}
