import 'reflect-metadata';
import type { DataSource } from 'typeorm';
import { postgresDataSource, type DatabaseOptions } from '@dlock/persistence';

export interface PaydbOptions {
  url: string;
  poolMax: number;
  statementTimeoutMs: number;
  /** Only the fixture CLI's --migrate passes these. */
  migrations?: DatabaseOptions['migrations'];
}

/** paydb's settings for postgresDataSource (libs/persistence): the service, the fixture CLI and tests. */
export function paydbSettings(options: PaydbOptions): DatabaseOptions {
  return {
    database: 'paydb',
    url: options.url,
    applicationName: 'payment-resource',
    poolMax: options.poolMax,
    connectTimeoutMs: 5_000,
    statementTimeoutMs: options.statementTimeoutMs,
    logging: ['error'],
    migrations: options.migrations,
  };
}

export function paydbDataSource(options: PaydbOptions): DataSource {
  return postgresDataSource(paydbSettings(options));
}
