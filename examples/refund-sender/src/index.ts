export * from './migrations/1764600000000-refund';
export * from './metrics.controller';
export * from './refund-errors';
export * from './refund-safety-events';
export * from './refund-sender.module';
export * from './refund-sender.service';
export * from './refund-sink';
export * from './refund.controller';
