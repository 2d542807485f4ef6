// eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
export const PAYDB_MIGRATIONS: Function[] = [];
