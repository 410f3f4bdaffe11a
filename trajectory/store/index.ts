export * from './types.js';
export { SqliteStore } from './sqlite.js';
