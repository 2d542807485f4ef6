export * from './error-codes';
export * from './errors';
export * from './fencing-token';
export * from './lock-types';
export * from './time';
export * from './request-deadline';
export * from './grant-proof';
export * from './revocation-notice';
