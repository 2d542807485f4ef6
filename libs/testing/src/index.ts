export * from './http';
export * from './postgres';
export * from './process';
