/** DI tokens of the two read-only database views. */
export const PAYDB = Symbol('PAYDB');
export const PROXYDB = Symbol('PROXYDB');
