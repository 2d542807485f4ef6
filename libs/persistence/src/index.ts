export * from './prepared';
