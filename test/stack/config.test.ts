import { Client } from '@temporalio/client';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { buildApiServer } from '../../api/index.js';
import { ConfigError, loadConfig } from '../../stack/config.js';
import { dataPaths } from '../../stack/paths.js';
import { startGatewayProcesses, startGateways } from '../../stack/roles/gateway-processes.js';
import { apiToken, gatewayAdminToken } from '../../stack/secrets.js';
import { storeUrl } from '../../stack/store.js';
import { temporalConnectionOptions } from '../../stack/temporal-connection.js';
import { openArtifactStore, SqliteStore } from '../../trajectory/index.js';

const dir = () => mkdtempSync(path.join(inject('testDataRoot'), 'config-'));
const pg = 'postgres://rollout@db.invalid/rollout';

describe('configuration for many machines', () => {
  it('takes the store URL and secrets from the environment, flags over both', async () => {
    const env = { ROLLOUT_STORE_URL: pg, ROLLOUT_GATEWAY_ADMIN_TOKEN: 'admin', ROLLOUT_API_TOKEN: 'api', TEMPORAL_API_KEY: 'key' };
    const config = await loadConfig(undefined, { 'api.token': 'flag' }, env);
    expect([storeUrl(config), gatewayAdminToken(config), apiToken(config), config.temporal.apiKey]).toEqual([pg, 'admin', 'flag', 'key']);
  });

  it('defaults to the SQLite file and the admin and API tokens minted in the data directory (mode 0600)', async () => {
    const dataDir = dir();
    const config = await loadConfig(undefined, { dataDir }, {});
    expect(storeUrl(config)).toBe(dataPaths(dataDir).store);
    expect(gatewayAdminToken(config)).toBe(readFileSync(dataPaths(dataDir).adminToken, 'utf8'));
    const token = apiToken(config);
    expect(token).toBe(readFileSync(dataPaths(dataDir).apiToken, 'utf8'));
    expect(token).not.toBe(gatewayAdminToken(config));
    expect(statSync(dataPaths(dataDir).apiToken).mode & 0o777).toBe(0o600);
    // Minted once: every process sharing the data directory reads the same one.
    expect(apiToken(await loadConfig(undefined, { dataDir }, {}))).toBe(token);
  });

  it('routes on engine KV events only when routing.kvEvents is set, with its defaults', async () => {
    expect((await loadConfig(undefined, { dataDir: dir() }, {})).routing.kvEvents).toBeUndefined();
    const on = await loadConfig(undefined, { dataDir: dir(), 'routing.kvEvents.staleAfterMs': 2000 }, {});
    expect(on.routing.kvEvents).toEqual({ staleAfterMs: 2000, maxBufferedBatches: 1024 });
  });

  it('picks the sandbox isolation by sandbox.provider: bubblewrap by default, gvisor, nothing else', async () => {
    expect((await loadConfig(undefined, { dataDir: dir() }, {})).sandbox.provider).toBe('bubblewrap');
    const gvisor = await loadConfig(undefined, { dataDir: dir(), 'sandbox.provider': 'gvisor' }, {});
    expect(gvisor.sandbox.provider).toBe('gvisor');
    await expect(
      loadConfig(undefined, { dataDir: dir(), 'sandbox.provider': 'docker' }, {}),
    ).rejects.toBeInstanceOf(ConfigError);
  });

  it('runs the gateway in-process by default, and 1 to 64 gateway processes', async () => {
    expect((await loadConfig(undefined, { dataDir: dir() }, {})).gateway.processes).toBe(1);
    expect((await loadConfig(undefined, { dataDir: dir(), 'gateway.processes': 64 }, {})).gateway.processes).toBe(64);
    expect((await loadConfig(undefined, { dataDir: dir() }, {})).gateway.singleThreadedGc).toBe(true);
    expect((await loadConfig(undefined, { dataDir: dir(), 'gateway.singleThreadedGc': false }, {})).gateway.singleThreadedGc).toBe(false);
    await expect(loadConfig(undefined, { dataDir: dir(), 'gateway.singleThreadedGc': 'yes' }, {})).rejects.toBeInstanceOf(ConfigError);
    expect((await loadConfig(undefined, { dataDir: dir() }, {})).gateway.maxSemiSpaceMiB).toBe(64);
    await expect(loadConfig(undefined, { dataDir: dir(), 'gateway.maxSemiSpaceMiB': 0 }, {})).rejects.toBeInstanceOf(ConfigError);
    for (const processes of [0, 65, 1.5])
      await expect(loadConfig(undefined, { dataDir: dir(), 'gateway.processes': processes }, {})).rejects.toBeInstanceOf(ConfigError);
    // Each process advertises the URL with its own port: port 0 leaves it unknown.
    const advertised = await loadConfig(undefined, { dataDir: dir(), 'gateway.processes': 2, 'gateway.port': 0, 'gateway.advertiseUrl': 'http://gw.example:8300' }, {});
    await expect(startGatewayProcesses(advertised)).rejects.toThrow(ConfigError);
  });

  it('takes only node flags as gateway.nodeArgs', async () => {
    for (const nodeArgs of [['-e'], ['script.js'], ['--cpu-prof', ''], ['--=x']])
      await expect(loadConfig(undefined, { dataDir: dir(), 'gateway.nodeArgs': nodeArgs }, {}), JSON.stringify(nodeArgs)).rejects.toThrow(/a node flag/);
    const flags = ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'];
    expect((await loadConfig(undefined, { dataDir: dir(), 'gateway.nodeArgs': flags }, {})).gateway.nodeArgs).toEqual(flags);
  });

  it('refuses gateway.metricsPort where no placement runs in the process, naming where the router metrics are', async () => {
    const inProcess = await loadConfig(undefined, { dataDir: dir(), 'gateway.metricsPort': 0 }, {});
    await expect(startGateways(inProcess)).rejects.toThrow(ConfigError);
    await expect(startGateways(inProcess)).rejects.toThrow(/an in-process gateway's own \/metrics/);
    const remote = await loadConfig(undefined, { dataDir: dir(), 'gateway.processes': 2, 'gateway.metricsPort': 0, 'gateway.placementUrl': 'http://127.0.0.1:9' }, {});
    await expect(startGatewayProcesses(remote)).rejects.toThrow(ConfigError);
    await expect(startGatewayProcesses(remote)).rejects.toThrow(/placement service's \/metrics/);
  });

  it('never mints a token for a shared store', async () => {
    const dataDir = dir();
    const config = await loadConfig(undefined, { dataDir, 'store.url': pg }, {});
    expect(() => gatewayAdminToken(config)).toThrow(ConfigError);
    expect(() => gatewayAdminToken(config)).toThrow(/ROLLOUT_GATEWAY_ADMIN_TOKEN/);
    expect(() => apiToken(config)).toThrow(/ROLLOUT_API_TOKEN/);
  });

  it('builds one set of Temporal connection options with TLS files and the API key', async () => {
    const d = dir();
    for (const name of ['ca.pem', 'client.pem', 'client.key']) writeFileSync(path.join(d, name), name);
    const config = await loadConfig(
      undefined,
      {
        'temporal.address': 'temporal.example:7233',
        'temporal.tls': { caFile: path.join(d, 'ca.pem'), certFile: path.join(d, 'client.pem'), keyFile: path.join(d, 'client.key'), serverName: 'temporal' },
        'temporal.apiKey': 'key',
      },
      {},
    );
    const options = temporalConnectionOptions(config);
    expect(options.address).toBe('temporal.example:7233');
    expect(options.apiKey).toBe('key');
    expect(options.tls?.serverNameOverride).toBe('temporal');
    expect(Buffer.from(options.tls!.serverRootCACertificate!).toString()).toBe('ca.pem');
    expect(Buffer.from(options.tls!.clientCertPair!.crt).toString()).toBe('client.pem');
    expect(Buffer.from(options.tls!.clientCertPair!.key).toString()).toBe('client.key');
    // The embedded dev server serves plain gRPC.
    expect(temporalConnectionOptions(await loadConfig(undefined, {}, { TEMPORAL_API_KEY: 'key' }), '127.0.0.1:7233')).toEqual({ address: '127.0.0.1:7233' });
  });
});

describe('the batch API token', () => {
  it('answers 401 without the bearer token, except for the OpenAPI document', async () => {
    const config = await loadConfig(undefined, { dataDir: dir() }, {});
    // A lazy client: no route reached here talks to Temporal.
    const app = buildApiServer({ config, client: new Client(), store: SqliteStore.open(':memory:'), artifacts: openArtifactStore(dir()), gateway: { urls: ['http://127.0.0.1:1'], adminToken: 'a' }, token: 'secret' });
    const status = async (url: string, authorization?: string) =>
      (await app.inject({ method: 'GET', url, headers: authorization ? { authorization } : {} })).statusCode;
    expect(await status('/v1/batches/x')).toBe(401);
    expect(await status('/v1/batches/x', 'Bearer wrong')).toBe(401);
    expect(await status('/openapi.json')).toBe(200);
    expect(await status('/no-such-route', 'Bearer secret')).toBe(404);
    await app.close();
  });
});
