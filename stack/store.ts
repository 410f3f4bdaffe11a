import { openStore, type Store } from '../trajectory/index.js';
import type { Config } from './config.js';
import { dataPaths } from './paths.js';

/** The configured store URL; default the SQLite file of the data directory. */
export function storeUrl(config: Config): string {
  return config.store.url ?? dataPaths(config.dataDir).store;
}

/** Whether processes on other machines share the store (PostgreSQL), so nothing may be per data directory. */
export function isSharedStore(config: Config): boolean {
  return /^postgres(ql)?:\/\//.test(storeUrl(config));
}

export function openConfiguredStore(config: Config): Promise<Store> {
  return openStore(storeUrl(config));
}
