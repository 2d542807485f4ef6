export * from './http';
export * from './postgres';
export * from './process';
export * from './etcd';
export * from './tcp-proxy';
export * from './embedded-postgres';
export * from './paydb-fixtures';
export * from './identity';
