export * from './dev-issuer';
export * from './errors';
export * from './token-files';
export * from './token-provider';
export * from './verifier';
export * from './auth-env';
export * from './operations';
export * from './policy';
