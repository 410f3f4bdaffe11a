import pg from 'pg';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packFloat32, packInt32 } from '../../trajectory/codec.js';
import { PostgresStore } from '../../trajectory/store/postgres.js';
import { SqliteStore } from '../../trajectory/store/sqlite.js';
import { freshDatabase } from '../helpers/postgres.js';
import { storeContract } from './store-contract.js';

let postgresUrl: string;
let sqliteDir: string;
beforeAll(async () => {
  postgresUrl = await freshDatabase();
  sqliteDir = mkdtempSync(path.join(os.tmpdir(), 'rollout-store-'));
});
afterAll(() => rmSync(sqliteDir, { recursive: true, force: true }));

storeContract('postgres', () => PostgresStore.open(postgresUrl, { poolSize: 4 }));
storeContract('sqlite', async () => SqliteStore.open(path.join(sqliteDir, 'store.sqlite')));

describe('PostgresStore', () => {
  it('applies its migrations once when several processes open a new database at once', async () => {
    const url = await freshDatabase();
    const stores = await Promise.all(Array.from({ length: 6 }, () => PostgresStore.open(url, { poolSize: 1 })));
    try {
      for (const s of stores) expect(await s.migrations()).toEqual([1, 2, 3]);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
    const reopened = await PostgresStore.open(url);
    expect(await reopened.migrations()).toEqual([1, 2, 3]);
    await reopened.close();
  });

  it('stores token arrays as the codec packs them (int32 and float32, little-endian)', async () => {
    const url = await freshDatabase();
    const store = await PostgresStore.open(url);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await store.commitTurn({
        sessionId: 's',
        chainIndex: 0,
        seq: 0,
        turnIndex: 0,
        promptDelta: [1, 256, -2],
        sampled: [151_643],
        logprobs: [-0.25],
        finishReason: 'stop',
        cachedTokens: 0,
        temperature: 1,
        logprobsMode: 'raw',
        version: 1,
        sampledVersions: [1],
        tLlmS: 0,
        messagesJson: '[]',
        replyJson: '{}',
        toolsJson: null,
        rolledBack: false,
      });
      const { rows } = await client.query<{ prompt_delta: Buffer; sampled: Buffer; logprobs: Buffer; sampled_versions: Buffer }>(
        'SELECT prompt_delta, sampled, logprobs, sampled_versions FROM turns',
      );
      expect(rows).toEqual([{ prompt_delta: packInt32([1, 256, -2]), sampled: packInt32([151_643]), logprobs: packFloat32([-0.25]), sampled_versions: packInt32([1]) }]);
      expect(rows[0]!.prompt_delta).toEqual(Buffer.from([1, 0, 0, 0, 0, 1, 0, 0, 0xfe, 0xff, 0xff, 0xff]));
    } finally {
      await client.end();
      await store.close();
    }
  });
});
