import { ProxydbInit1767225600000 } from './1767225600000-proxydb-init';

// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export const PROXYDB_MIGRATIONS: Function[] = [ProxydbInit1767225600000];
