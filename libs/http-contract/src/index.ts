export * from './bootstrap';
export * from './db-errors';
export * from './envelope';
export * from './exception.filter';
export * from './headers';
export * from './json';
export * from './trace';
export * from './validation';
