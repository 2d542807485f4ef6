export * from './error-codes';
export * from './errors';
export * from './fencing-token';
export * from './lock-types';
export * from './payout-types';
export * from './time';
export * from './payout-protocol';
export * from './request-deadline';
