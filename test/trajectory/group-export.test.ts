import { tableFromIPC } from 'apache-arrow';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../stack/ports.js';
import { startS3Server, type S3Server } from '../../stack/s3-server.js';
import {
  exportGroup,
  GroupExportError,
  openArtifactStore,
  SqliteStore,
  type ArtifactStore,
  type EpisodeRecord,
  type Store,
  type StoredTurn,
} from '../../trajectory/index.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'rollout-group-export-'));
let server: S3Server;
let store: Store;
let artifacts: ArtifactStore;
const BUCKET = 'groups';

function episode(i: number, sessionId: string | null, groupId: string): EpisodeRecord {
  return {
    episodeId: `b/t/${i}`,
    batchId: 'b',
    taskId: 't',
    groupId,
    episodeIndex: i,
    agentName: 'builtin',
    sessionId,
    outcome: 'ok',
    terminationReason: 'stop',
    reward: i % 2,
    rewardInfo: {},
    numTurns: 1,
    numToolCalls: 0,
    tEpisodeS: 1,
    tEnvS: 0,
  };
}

function turn(sessionId: string): StoredTurn {
  return {
    sessionId,
    chainIndex: 0,
    seq: 0,
    turnIndex: 0,
    promptDelta: [1, 2, 3],
    sampled: [4, 5],
    logprobs: [-0.5, -0.25],
    finishReason: 'stop',
    cachedTokens: 0,
    temperature: 1,
    logprobsMode: 'raw',
    version: 0,
    sampledVersions: [0, 0],
    tLlmS: 0.1,
    messagesJson: '[]',
    replyJson: '{}',
    toolsJson: null,
    rolledBack: false,
  };
}

/** Episode i of a group, recorded ok with one turn in its session (or none, when `turns` is false). */
async function recordEpisode(groupId: string, i: number, turns = true): Promise<string> {
  const sessionId = `s${i}`;
  await store.createSession({ sessionId, key: `k${i}`, episodeId: `b/t/${i}`, attempt: 0, info: {} as never });
  if (turns) await store.commitTurn(turn(sessionId));
  await store.recordEpisode(episode(i, sessionId, groupId));
  return `b/t/${i}`;
}

beforeAll(async () => {
  server = await startS3Server({ dataDir: path.join(root, 's3'), port: await freePort() });
  await server.createBucket(BUCKET);
  const s3 = { endpoint: server.endpoint, region: server.region, accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey };
  artifacts = openArtifactStore(`s3://${BUCKET}/exports`, { s3 });
  store = SqliteStore.open(path.join(root, 'store.sqlite'));
});

afterAll(async () => {
  await store?.close();
  await artifacts?.close();
  await server?.stop();
  rmSync(root, { recursive: true, force: true });
});

describe('group export checked against the store', () => {
  it('writes every ok episode of the group to S3 and reads the same rows back', async () => {
    const ids = [await recordEpisode('b.g0', 0), await recordEpisode('b.g0', 1)];
    const file = await exportGroup({ store, artifacts }, { batchId: 'b', groupId: 'b.g0', episodeIds: ids });
    expect(file).toMatchObject({ uri: `s3://${BUCKET}/exports/b/groups/b.g0.arrow`, rows: 2, format: 'arrow-stream' });
    const table = tableFromIPC(await artifacts.get(file.uri));
    expect(table.getChild('episode_id')!.toArray()).toEqual(ids);
  });

  it('names an ok episode whose turns are missing from the store, and writes no file for it', async () => {
    const ids = [await recordEpisode('b.g1', 2), await recordEpisode('b.g1', 3, false)];
    const error = await exportGroup({ store, artifacts }, { batchId: 'b', groupId: 'b.g1', episodeIds: ids }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GroupExportError);
    expect((error as GroupExportError).missingEpisodeIds).toEqual(['b/t/3']);
    expect(await artifacts.exists('b/groups/b.g1.arrow')).toBe(false);
  });

  it('names an ok episode the store has no record of', async () => {
    const ids = [await recordEpisode('b.g2', 4), 'b/t/never-recorded'];
    const error = await exportGroup({ store, artifacts }, { batchId: 'b', groupId: 'b.g2', episodeIds: ids }).catch((e: unknown) => e);
    expect((error as GroupExportError).missingEpisodeIds).toEqual(['b/t/never-recorded']);
  });

  it('names every episode when the artifact store refuses the file', async () => {
    const broken = openArtifactStore('s3://no-such-bucket/exports', {
      s3: { endpoint: server.endpoint, region: server.region, accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
    });
    const ids = [await recordEpisode('b.g3', 5)];
    const error = await exportGroup({ store, artifacts: broken }, { batchId: 'b', groupId: 'b.g3', episodeIds: ids }).catch((e: unknown) => e);
    await broken.close();
    // The put itself fails: not a GroupExportError, so the activity's retries and the workflow's
    // export_failed (all episodes missing) take it from there.
    expect(error).toBeInstanceOf(Error);
    expect(String(error)).toMatch(/bucket/i);
  });
});
