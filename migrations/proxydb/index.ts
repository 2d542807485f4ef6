// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export const PROXYDB_MIGRATIONS: Function[] = [];
