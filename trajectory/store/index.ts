export * from './types.js';
export { SqliteStore } from './sqlite.js';
export { openStore, StoreUrlError } from './open.js';
