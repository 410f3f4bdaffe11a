import { CONFIG_ENV, ConfigError, type Config } from './config.js';
import { adminToken, mintedApiToken } from './paths.js';
import { isSharedStore } from './store.js';

const envOf = (key: string): string => Object.entries(CONFIG_ENV).find(([, k]) => k === key)![0];

function missing(key: string): ConfigError {
  return new ConfigError(`${key} (or env ${envOf(key)}) must be set when store.url is a shared PostgreSQL store: a token cannot be made per data directory`);
}

/**
 * The gateway's admin token: `gateway.adminToken`, else (one machine, SQLite store) the token
 * minted once in the data directory. With a shared store it must be given.
 */
export function gatewayAdminToken(config: Config): string {
  if (config.gateway.adminToken) return config.gateway.adminToken;
  if (isSharedStore(config)) throw missing('gateway.adminToken');
  return adminToken(config.dataDir);
}

/**
 * The batch API's bearer token, always checked: `api.token`, else (one machine, SQLite store) the
 * token minted once in the data directory. With a shared store it must be given.
 */
export function apiToken(config: Config): string {
  if (config.api.token) return config.api.token;
  if (isSharedStore(config)) throw missing('api.token');
  return mintedApiToken(config.dataDir);
}
