export * from './health';
export * from './observability.module';
export * from './safety-events';
