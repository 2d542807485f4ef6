// The environment classes and their readers without the Nest module (app-config.module.ts), as
// @dlock/config/env: what scripts and the lower libraries import, so that they load no Nest
// (docs/architecture.md).
export * from './env-error';
export * from './env.decorators';
export * from './validate-env';
export * from './exit-on-bad-config';
export * from './database-env';
export * from './service-env';
