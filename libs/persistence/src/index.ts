export * from './prepared';
export * from './startup';
