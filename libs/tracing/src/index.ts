export * from './config';
export * from './context';
export type { SpanRecord } from './memory-exporter';
export * from './start';
