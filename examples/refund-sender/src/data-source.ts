import { DataSource } from 'typeorm';
import { REFUND_MIGRATIONS } from './migrations/1764600000000-refund';

const url = process.env.REFUNDS_DATABASE_URL;
// Unset, pg would quietly connect to a local default database instead.
if (!url) throw new Error('REFUNDS_DATABASE_URL is not set');

/**
 * For the TypeORM CLI, on the compiled file (docs/extending.md, "Migrations"):
 *   REFUNDS_DATABASE_URL=postgres://… npx typeorm migration:run -d dist/data-source.js
 */
export default new DataSource({
  type: 'postgres',
  url,
  migrations: REFUND_MIGRATIONS,
  synchronize: false,
  logging: ['error', 'migration'],
});
