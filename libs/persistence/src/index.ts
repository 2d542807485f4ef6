export * from './prepared';
export * from './startup';
export * from './audit';
export * from './fenced-update';
export * from './database.module';
export * from './row-id';
export * from './sql-state';
export * from './migrate';
