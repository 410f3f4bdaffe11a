export * from './types.js';
export { SqliteStore } from './sqlite.js';
export { PostgresStore, type PostgresStoreOptions } from './postgres.js';
export { openStore, StoreUrlError } from './open.js';
