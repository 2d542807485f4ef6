export * from './prepared';
export * from './startup';
export * from './audit-chain';
export * from './audit-verify';
export * from './fenced-update';
export * from './audit-since';
export * from './database.module';
export * from './row-id';
