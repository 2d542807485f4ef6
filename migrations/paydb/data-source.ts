import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { PAYDB_MIGRATIONS } from './index';

/**
 * TypeORM CLI data source for paydb. Build first, then:
 *   PAYDB_URL=postgres://... npx typeorm migration:run -d dist/migrations/paydb/data-source.js
 */
export default new DataSource({
  type: 'postgres',
  url: process.env.PAYDB_URL,
  migrations: PAYDB_MIGRATIONS,
  synchronize: false,
  logging: ['error', 'migration'],
});
