import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { cliDatabaseUrl } from '@dlock/config';
import { LOCKDB_MIGRATIONS } from './index';

/**
 * TypeORM CLI data source for lockdb. Build first, then:
 *   LOCKDB_URL=postgres://... npx typeorm migration:run -d dist/migrations/lockdb/data-source.js
 */
export default new DataSource({
  type: 'postgres',
  // Refused at load when unset or scheme-less (pg would fall back to localhost), the variable
  // named without a stack trace.
  url: cliDatabaseUrl('LOCKDB_URL'),
  migrations: LOCKDB_MIGRATIONS,
  synchronize: false,
  logging: ['error', 'migration'],
});
