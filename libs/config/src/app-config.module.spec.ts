import 'reflect-metadata';
import { ConfigService } from '@nestjs/config';
import { NestFactory } from '@nestjs/core';
import { AppConfigModule, envFileOptions } from './app-config.module';
import { EnvInt, EnvString } from './env.decorators';
import { EnvError, type EnvSource } from './env-error';
import { validateEnv } from './validate-env';

class DemoEnv {
  @EnvInt({ default: 8080, min: 0, max: 65535 }) readonly PORT!: number;
  @EnvString() readonly OWNER_ID!: string;
}
const DEMO_CONFIG = Symbol('DEMO_CONFIG');
const read = (source: EnvSource) => validateEnv(DemoEnv, source);

describe('AppConfigModule', () => {
  it('provides the validated config under its token and through ConfigService', async () => {
    const { module, config } = await AppConfigModule.forRoot(DEMO_CONFIG, read, {
      env: { OWNER_ID: 'w-1', PORT: '9090' },
    });
    const app = await NestFactory.createApplicationContext(module, { logger: false });
    try {
      expect(app.get(DEMO_CONFIG)).toBe(config);
      expect(config).toEqual({ PORT: 9090, OWNER_ID: 'w-1' });
      expect(app.get(ConfigService).get<number>('PORT')).toBe(9090);
    } finally {
      await app.close();
    }
  });

  it('rejects with an EnvError naming every bad variable, before any module is built', async () => {
    await expect(
      AppConfigModule.forRoot(DEMO_CONFIG, read, { env: { PORT: 'eighty' } }),
    ).rejects.toEqual(
      new EnvError(['PORT: must be an integer, got "eighty"', 'OWNER_ID: is required']),
    );
  });

  it('reads a .env file only when DLOCK_ENV_FILE names one', () => {
    expect(envFileOptions({})).toEqual({ ignoreEnvFile: true });
    expect(envFileOptions({ DLOCK_ENV_FILE: '' })).toEqual({ ignoreEnvFile: true });
    expect(envFileOptions({ DLOCK_ENV_FILE: 'apps/executor/.env' })).toEqual({
      envFilePath: 'apps/executor/.env',
    });
  });
});
