import { ProxydbInit1767225600000 } from './1767225600000-proxydb-init';
import { RailAttemptsKept1796083200000 } from './1796083200000-rail-attempts-kept';
import { RailAttemptsChained1796313600000 } from './1796313600000-rail-attempts-chained';

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export const PROXYDB_MIGRATIONS: Function[] = [
  ProxydbInit1767225600000,
  RailAttemptsKept1796083200000,
  RailAttemptsChained1796313600000,
];
