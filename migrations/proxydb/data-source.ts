import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { cliDatabaseUrl } from '@dlock/config';
import { PROXYDB_MIGRATIONS } from './index';

/**
 * TypeORM CLI data source for proxydb. Build first, then:
 *   PROXYDB_URL=postgres://... npx typeorm migration:run -d dist/migrations/proxydb/data-source.js
 */
export default new DataSource({
  type: 'postgres',
  // Refused at load when unset or scheme-less (pg would fall back to localhost), the variable
  // named without a stack trace.
  url: cliDatabaseUrl('PROXYDB_URL'),
  migrations: PROXYDB_MIGRATIONS,
  synchronize: false,
  logging: ['error', 'migration'],
});
