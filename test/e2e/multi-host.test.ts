import { Client, Connection } from '@temporalio/client';
import { tableFromIPC } from 'apache-arrow';
import pg from 'pg';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BatchManifest, BatchProgress } from '../../activities/types.js';
import { freePort } from '../../stack/ports.js';
import { startPostgresCluster, type PostgresCluster } from '../../stack/postgres-cluster.js';
import { startS3Server, type S3Server } from '../../stack/s3-server.js';
import { findTemporalServerTools } from '../../stack/temporal-binary.js';
import { startTemporalServer, type TemporalServer } from '../../stack/temporal-server.js';
import { episodeRows, openArtifactStore, openStore, type ArtifactStore, type Store } from '../../trajectory/index.js';
import { progressQuery } from '../../workflows/queries.js';
import { startHost, type TestHost } from '../helpers/hosts.js';
import { freshDatabase } from '../helpers/postgres.js';
import { startTestEngines, type TestEngines } from '../helpers/stack.js';

/**
 * Many machines on one: a Temporal server on PostgreSQL, one PostgreSQL store, S3 object storage,
 * and every role as its own process in a private mount namespace (two worker hosts, two gateway
 * replicas, a placement service, the batch API). A 64-episode batch runs while one worker host
 * and one gateway replica are killed with SIGKILL.
 */
const built = findTemporalServerTools() !== null || process.env.CI === 'true';
const TASKS = ['py-slugify-1', 'py-word-wrap-1', 'py-roman-numerals-1', 'py-date-range-1', 'js-lru-cache-1', 'js-csv-split-1', 'js-ini-parser-1', 'js-semver-compare-1'];
const N = 8;
const EPISODE_TOKENS = 50_000;
const KV_CAPACITY = 200_000;
/** Episodes an engine may run at once: kvCapacityTokens / episodeTokens. */
const SLOTS = KV_CAPACITY / EPISODE_TOKENS;
const ADMIN_TOKEN = 'multi-host-admin-token';
const API_TOKEN = 'multi-host-api-token';
const BUCKET = 'rollouts';

const root = mkdtempSync(path.join(os.tmpdir(), 'rollout-multi-host-'));
const batchId = `multi-${Date.now()}`;
const hosts: TestHost[] = [];
let temporalPg: PostgresCluster;
let temporal: TemporalServer;
let s3: S3Server;
let engines: TestEngines;
let store: Store;
let artifacts: ArtifactStore;
let connection: Connection;
let manifest: BatchManifest;
/** Most live leases seen on one engine at any sample while the batch ran. */
let mostLeasesOnOneEngine = 0;
let leaseSamples = 0;
let killedAt: BatchProgress | undefined;
let storeUrl: string;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!built)('a batch across hosts on Temporal + PostgreSQL + S3, with a worker host and a gateway killed', () => {
  beforeAll(async () => {
    // PostgreSQL runs as its own user, which must reach its directory inside this one.
    chmodSync(root, 0o711);
    temporalPg = await startPostgresCluster({ dataDir: path.join(root, 'temporal-pg'), port: await freePort() });
    temporal = await startTemporalServer({ dataDir: path.join(root, 'temporal'), postgres: temporalPg, port: await freePort() });
    s3 = await startS3Server({ dataDir: path.join(root, 's3'), port: await freePort() });
    await s3.createBucket(BUCKET);
    engines = await startTestEngines({ count: 2, wanderProbability: 0.4, timeScale: 0.02 });
    storeUrl = await freshDatabase();
    store = await openStore(storeUrl);
    const s3Options = { endpoint: s3.endpoint, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey };
    artifacts = openArtifactStore(`s3://${BUCKET}/batches`, { s3: s3Options });

    const ports = { g1: await freePort(), g2: await freePort(), placement: await freePort(), api: await freePort() };
    const gatewayUrls = [`http://127.0.0.1:${ports.g1}`, `http://127.0.0.1:${ports.g2}`];
    const common = {
      temporal: { address: temporal.address, taskQueue: `multi-${Date.now()}` },
      store: { url: storeUrl },
      artifacts: { uri: `s3://${BUCKET}/batches`, s3: s3Options },
      engines: engines.instances.map((e) => ({ ...e, kvCapacityTokens: KV_CAPACITY })),
      admission: { episodeTokens: EPISODE_TOKENS },
      limits: { commandTimeoutMs: 30_000 },
      // A dead host's queued work and its cleanup give up quickly.
      worker: { scheduleToStartMs: 10_000, cleanupWindowMs: 10_000 },
    };
    const env = { ROLLOUT_GATEWAY_ADMIN_TOKEN: ADMIN_TOKEN, ROLLOUT_API_TOKEN: API_TOKEN };
    const configDir = path.join(root, 'configs');
    const start = (name: string, role: string, config: Record<string, unknown>) => {
      const host = startHost({ name, role, config: { ...common, ...config }, configDir, env });
      hosts.push(host);
      return host;
    };
    const placement = start('placement', 'placement', { gateway: { placementPort: ports.placement } });
    await placement.waitFor(/placement service listening/);
    const gateway = (name: string, port: number) =>
      start(name, 'gateway', { gateway: { port, replicaId: name, placementUrl: `http://127.0.0.1:${ports.placement}` } });
    const g1 = gateway('gateway-1', ports.g1);
    const g2 = gateway('gateway-2', ports.g2);
    await Promise.all([g1.waitFor(/gateway listening/), g2.waitFor(/gateway listening/)]);
    const api = start('api', 'api', { api: { port: ports.api }, gateway: { urls: gatewayUrls } });
    const worker = (name: string) => start(name, 'worker', { worker: { ...common.worker, hostId: name }, gateway: { urls: gatewayUrls } });
    const workerA = worker('host-a');
    const workerB = worker('host-b');
    await Promise.all([api.waitFor(/batch API listening/), workerA.waitFor(/worker joined/), workerB.waitFor(/worker joined/)]);

    const apiUrl = `http://127.0.0.1:${ports.api}`;
    const created = await fetch(`${apiUrl}/v1/batches`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${API_TOKEN}` },
      body: JSON.stringify({ batch_id: batchId, task_ids: TASKS, n: N, concurrency: 12, filter_uniform_groups: false }),
    });
    expect(created.status, await created.clone().text()).toBe(202);

    connection = await Connection.connect({ address: temporal.address });
    const handle = new Client({ connection }).workflow.getHandle(batchId);
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const perEngine = new Map<string, number>();
        for (const lease of await store.listLeases()) perEngine.set(lease.instance, (perEngine.get(lease.instance) ?? 0) + 1);
        mostLeasesOnOneEngine = Math.max(mostLeasesOnOneEngine, ...perEngine.values(), 0);
        leaseSamples += 1;
        await sleep(200);
      }
    })();
    // Kill a worker host and a gateway replica once a quarter of the batch is done.
    for (;;) {
      const progress = await handle.query(progressQuery).catch(() => undefined);
      if (progress && progress.done >= (TASKS.length * N) / 4) {
        killedAt = progress;
        break;
      }
      await sleep(500);
    }
    await workerA.kill();
    await g1.kill();
    const killed = Date.now();
    const watch = setInterval(() => {
      void handle.query(progressQuery).then(
        (p) => console.log(`multi-host: +${Math.round((Date.now() - killed) / 1000)} s after the kills: ${p.done} done, ${p.running} running`),
        () => undefined,
      );
    }, 15_000);
    manifest = await handle.result().finally(() => clearInterval(watch));
    sampling = false;
    await sampler;
  }, 900_000);

  afterAll(async () => {
    for (const host of hosts.reverse()) await host.stop().catch(() => undefined);
    await connection?.close();
    await store?.close();
    await artifacts?.close();
    await engines?.close();
    await s3?.stop();
    await temporal?.stop();
    await temporalPg?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('completes every episode after the kills', () => {
    expect(killedAt!.done).toBeLessThan(TASKS.length * N);
    expect(manifest.status).toBe('complete');
    expect(manifest.stats.episodes).toBe(TASKS.length * N);
    expect(manifest.groups.map((g) => g.status)).toEqual(TASKS.map(() => 'finished'));
  });

  it('delivers every ok episode exactly once: rows per episode in S3 equal the store', async () => {
    const delivered = new Map<string, number>();
    for (const group of manifest.groups) {
      const table = tableFromIPC(await artifacts.get(group.file!.uri));
      for (const id of table.getChild('episode_id')!.toArray() as string[]) delivered.set(id, (delivered.get(id) ?? 0) + 1);
    }
    const episodes = await store.listEpisodes(batchId);
    expect(episodes.filter((e) => e.outcome === 'ok')).toHaveLength(TASKS.length * N);
    const expected = new Map<string, number>();
    for (const row of await episodeRows(store, episodes)) expected.set(row.episode_id, (expected.get(row.episode_id) ?? 0) + 1);
    expect(expected.size).toBe(TASKS.length * N);
    expect(delivered).toEqual(expected);
  });

  it('lost work to the kills and recovered it: attempts restarted, sessions taken over', async () => {
    const db = new pg.Client({ connectionString: storeUrl });
    await db.connect();
    try {
      const sessions = await db.query<{ attempts: string; retried: string; owners: string[] }>(
        `SELECT COUNT(*) AS attempts, COUNT(*) FILTER (WHERE attempt > 0) AS retried, ARRAY_AGG(DISTINCT owner) AS owners
         FROM sessions WHERE episode_id LIKE $1`,
        [`${batchId}/%`],
      );
      const { attempts, retried, owners } = sessions.rows[0]!;
      console.log(
        `multi-host: killed host-a and gateway-1 at ${killedAt!.done}/${TASKS.length * N} episodes done; ` +
          `${attempts} sessions for ${TASKS.length * N} episodes (${retried} restarted attempts); owners ${owners.join(', ')}; ` +
          `${leaseSamples} lease samples, at most ${mostLeasesOnOneEngine} of ${SLOTS} slots on one engine`,
      );
      // Host A held sandboxes when it died: their episodes restarted on host B.
      expect(Number(retried)).toBeGreaterThan(0);
      expect(owners).toContain('gateway-2');
    } finally {
      await db.end();
    }
  });

  it('never admitted more episodes to an engine than its slots, and leaves no lease', async () => {
    expect(leaseSamples).toBeGreaterThan(10);
    expect(mostLeasesOnOneEngine).toBeGreaterThan(0);
    expect(mostLeasesOnOneEngine).toBeLessThanOrEqual(SLOTS);
    expect(await store.listLeases()).toEqual([]);
  });
});
