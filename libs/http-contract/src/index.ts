export * from './bootstrap';
export * from './deadline';
export * from './envelope';
export * from './exception.filter';
export * from './headers';
export * from './json';
export * from './trace';
export * from './validation';
