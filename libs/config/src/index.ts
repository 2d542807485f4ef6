export * from './env';
export * from './app-config.module';
