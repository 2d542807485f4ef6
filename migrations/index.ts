import type { MixedList } from 'typeorm';
import { LOCKDB_MIGRATIONS } from './lockdb';
import { PAYDB_MIGRATIONS } from './paydb';
import { PROXYDB_MIGRATIONS } from './proxydb';

export type DatabaseName = 'lockdb' | 'paydb' | 'proxydb';

// Migration classes are listed explicitly (no globs), so the compiled output
// and the TypeORM CLI see exactly the same set.
// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export const MIGRATIONS: Record<DatabaseName, MixedList<Function>> = {
  lockdb: LOCKDB_MIGRATIONS,
  paydb: PAYDB_MIGRATIONS,
  proxydb: PROXYDB_MIGRATIONS,
};
