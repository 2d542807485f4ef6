import 'reflect-metadata';
import { DataSource } from 'typeorm';

export interface PaydbOptions {
  url: string;
  poolMax: number;
  statementTimeoutMs: number;
  /** Only the fixture CLI's --migrate passes these. */
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  migrations?: Function[];
}

/** TypeORM owns the pool, transactions and migrations; the schema is never synchronised. */
export function paydbDataSource(options: PaydbOptions): DataSource {
  return new DataSource({
    type: 'postgres',
    url: options.url,
    synchronize: false,
    migrationsRun: false,
    migrations: options.migrations ?? [],
    logging: ['error'],
    extra: {
      max: options.poolMax,
      statement_timeout: options.statementTimeoutMs,
      connectionTimeoutMillis: 5_000,
      application_name: 'payment-resource',
    },
  });
}
