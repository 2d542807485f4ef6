import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { PROXYDB_MIGRATIONS } from './index';

/**
 * TypeORM CLI data source for proxydb. Build first, then:
 *   PROXYDB_URL=postgres://... npx typeorm migration:run -d dist/migrations/proxydb/data-source.js
 */
export default new DataSource({
  type: 'postgres',
  url: process.env.PROXYDB_URL,
  migrations: PROXYDB_MIGRATIONS,
  synchronize: false,
  logging: ['error', 'migration'],
});
