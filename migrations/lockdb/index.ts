// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export const LOCKDB_MIGRATIONS: Function[] = [];
