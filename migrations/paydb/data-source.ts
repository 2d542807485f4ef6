import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { cliDatabaseUrl } from '@dlock/config';
import { PAYDB_MIGRATIONS } from './index';

/**
 * TypeORM CLI data source for paydb. Build first, then:
 *   PAYDB_URL=postgres://... npx typeorm migration:run -d dist/migrations/paydb/data-source.js
 */
export default new DataSource({
  type: 'postgres',
  // Refused at load when unset or scheme-less (pg would fall back to localhost), the variable
  // named without a stack trace.
  url: cliDatabaseUrl('PAYDB_URL'),
  migrations: PAYDB_MIGRATIONS,
  synchronize: false,
  logging: ['error', 'migration'],
});
