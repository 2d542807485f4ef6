/** DI tokens of the read-only database views (LOCKDB: null when LOCKDB_URL is unset). */
export const PAYDB = Symbol('PAYDB');
export const PROXYDB = Symbol('PROXYDB');
export const LOCKDB = Symbol('LOCKDB');
