export * from './errors';
export * from './hop-policy';
export * from './json';
export * from './peer';
export * from './transport';
