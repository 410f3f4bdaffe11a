import type { TLSConfig } from '@temporalio/client';
import { readFileSync } from 'node:fs';
import { ConfigError, type Config } from './config.js';

/** What both `Connection.connect` (client) and `NativeConnection.connect` (worker) take from us. */
export interface TemporalConnectionOptions {
  address: string;
  tls?: TLSConfig;
  apiKey?: string;
}

function readPem(key: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new ConfigError(`cannot read ${key} ${file}: ${(error as Error).message}`);
  }
}

/**
 * How every process connects to Temporal: `temporal.address` with its TLS and API key. Given
 * `devServerAddress` (no address configured), the embedded dev server, which serves plain gRPC.
 */
export function temporalConnectionOptions(config: Config, devServerAddress?: string): TemporalConnectionOptions {
  const { address, tls, apiKey } = config.temporal;
  if (!address) {
    if (devServerAddress) return { address: devServerAddress };
    throw new ConfigError('temporal.address is not set (the Temporal front end, host:port)');
  }
  const options: TemporalConnectionOptions = { address };
  if (tls) {
    options.tls = {
      ...(tls.serverName && { serverNameOverride: tls.serverName }),
      ...(tls.caFile && { serverRootCACertificate: readPem('temporal.tls.caFile', tls.caFile) }),
      ...(tls.certFile &&
        tls.keyFile && {
          clientCertPair: { crt: readPem('temporal.tls.certFile', tls.certFile), key: readPem('temporal.tls.keyFile', tls.keyFile) },
        }),
    };
  }
  // The SDK turns TLS on for an API key when `tls` is not given.
  if (apiKey) options.apiKey = apiKey;
  return options;
}
