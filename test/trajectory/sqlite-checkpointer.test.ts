import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../trajectory/index.js';
import { SAMPLING_DEFAULTS } from '../../gateway/sampling-schema.js';

const INFO = {
  batchId: 'b', taskId: 't', groupId: 'g', agentName: 'a', homeInstance: 'e0', episodeIndex: 0,
  budgets: { maxTurns: 999, maxContextTokens: 65_536, maxWallTimeMs: 3_600_000 },
  sampling: { ...SAMPLING_DEFAULTS, maxTokens: 64 },
};

/** About 6 MB of turns: well past the 1000 WAL pages after which SQLite would checkpoint on commit. */
async function writeTurns(store: SqliteStore): Promise<void> {
  await store.createSession({ sessionId: 's', key: 'k', episodeId: 'e', attempt: 0, info: INFO });
  const ids = Array.from({ length: 2000 }, (_, i) => i);
  for (let seq = 0; seq < 200; seq++) {
    await store.commitTurn({
      sessionId: 's', chainIndex: 0, seq, turnIndex: seq, promptDelta: ids, sampled: ids.slice(0, 64), logprobs: ids.slice(0, 64).map(() => -0.5),
      finishReason: 'tool_call', cachedTokens: 0, temperature: 1, logprobsMode: 'raw', version: 0, sampledVersions: [0], tLlmS: 0.01, messagesJson: 'x'.repeat(20_000), replyJson: '{}', toolsJson: null, rolledBack: false,
    });
  }
}

const until = async (check: () => boolean, ms: number) => {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  return check();
};

describe('SQLite WAL checkpoints in a background thread', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
  const open = () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'checkpointer-'));
    dirs.push(dir);
    const file = path.join(dir, 'store.sqlite');
    return { file, store: SqliteStore.open(file) };
  };

  it('commits never checkpoint; the thread copies the WAL into the database file', async () => {
    const { file, store } = open();
    expect(store.db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    const before = statSync(file).size;
    await writeTurns(store);
    // Only a checkpoint moves pages from the WAL into the main file.
    expect(await until(() => statSync(file).size > before + 4 * 1024 * 1024, 5000)).toBe(true);
    expect((await store.loadTurns('s')).length).toBe(200);
    await store.close();
    const again = SqliteStore.open(file);
    expect((await again.loadTurns('s')).length).toBe(200);
    await again.close();
  });

  it('checkpoints on commit again when the thread fails', async () => {
    const { file, store } = open();
    // The thread's next checkpoint fails on the removed files; the store's open connection still works.
    rmSync(path.dirname(file), { recursive: true, force: true });
    expect(await until(() => store.db.pragma('wal_autocheckpoint', { simple: true }) === 1000, 5000)).toBe(true);
    await store.close();
  });
});
