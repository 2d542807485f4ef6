export * from './health';
export * from './observability.module';
export * from './safety-events';
export * from './safety-event-feed';
export * from './safety-events.controller';
export * from './safety-events.client';
export * from './signing-key-log';
