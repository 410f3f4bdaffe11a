import { PostgresStore } from './postgres.js';
import { SqliteStore } from './sqlite.js';
import type { Store } from './types.js';

export class StoreUrlError extends Error {
  override name = 'StoreUrlError';
}

/**
 * Opens the store a URL names: `postgres://` or `postgresql://` for PostgreSQL (many machines),
 * `sqlite:<path>` or a plain path for a SQLite file (one machine). Migrations are applied on open.
 */
export async function openStore(url: string): Promise<Store> {
  if (/^postgres(ql)?:\/\//.test(url)) return PostgresStore.open(url);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) throw new StoreUrlError(`unsupported store URL ${url}: use postgres://… or a SQLite file path`);
  return SqliteStore.open(url.replace(/^sqlite:/, ''));
}
