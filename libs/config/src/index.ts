export * from './env-error';
export * from './env.decorators';
export * from './validate-env';
export * from './app-config.module';
export * from './exit-on-bad-config';
export * from './database-env';
