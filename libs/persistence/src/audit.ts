// The audit chains (docs/audit.md) as @dlock/persistence/audit: node built-ins only, no TypeORM
// or Nest, for the migrations and `npm run audit:verify` (docs/architecture.md).
export * from './audit-chain';
export * from './audit-verify';
export * from './audit-since';
