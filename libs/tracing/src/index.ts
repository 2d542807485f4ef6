export * from './config';
export * from './context';
export type { SpanRecord } from './memory-exporter';
export * from './start';
export { inboundTrace, runInRequestTrace, withTraceHeaders, type HopTrace } from './propagation';
