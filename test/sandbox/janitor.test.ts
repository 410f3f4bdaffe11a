import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  createJanitorActivities,
  sweepSandboxes,
  isEpisodeOpen,
} from '../../activities/janitor.js';
import { BubblewrapProvider } from '../../sandbox/bubblewrap.js';
import { openStore, type Store } from '../../trajectory/index.js';
import { ensureJanitorSchedule, janitorScheduleId, registerHost, startJanitor } from '../../workers/janitor.js';
import { bundleWorkflows, hostQueueOf, installWorkerRuntime } from '../../workers/worker.js';
import type { JanitorHostReport } from '../../workflows/janitor.js';
import { removeAllSandboxes, removeDirs, tempDir, writeTree } from './helpers.js';

const run = `${process.pid}-${Date.now()}`;
const dirs: string[] = [];
const providers: [BubblewrapProvider, string][] = [];
let workspace: string;
let connection: Connection;
let client: Client;
let store: Store;
const HOST_TTL_MS = 60_000;

async function newProvider(): Promise<BubblewrapProvider> {
  const root = await tempDir('janitor');
  dirs.push(root);
  const provider = new BubblewrapProvider({ rootDir: root });
  providers.push([provider, root]);
  return provider;
}

/** A workflow that stays running: nobody polls its queue. */
async function openEpisode(id: string): Promise<void> {
  await client.workflow.start('notRegistered', { workflowId: id, taskQueue: `nobody-${run}` });
}

/** A workflow that ran and ended. */
async function closedEpisode(id: string): Promise<void> {
  const handle = await client.workflow.start('notRegistered', {
    workflowId: id,
    taskQueue: `nobody-${run}`,
  });
  await handle.terminate('episode over');
}

/** A fresh agent state directory holding one state file per episode of `seed` (two for the closed one). */
async function seedAgentState(tag: string): Promise<{ dir: string; closed: string[]; kept: string[] }> {
  const dir = await tempDir('agent-state');
  dirs.push(dir);
  const file = (episode: string, attempt: number) => `${encodeURIComponent(episode)}.a${attempt}.json`;
  const closed = [file(`ep-closed-${tag}`, 0), file(`ep-closed-${tag}`, 1), file(`ep-never-${tag}`, 0)];
  const kept = [file(`ep-open-${tag}`, 0), 'not-a-state-file.txt'];
  for (const name of [...closed, ...kept]) await writeFile(join(dir, name), '{}');
  return { dir, closed: closed.sort(), kept: kept.sort() };
}

/** Sandboxes of each kind the janitor must tell apart, on `provider`. */
async function seed(provider: BubblewrapProvider, tag: string) {
  const make = (name: string, labels: Record<string, string>, ttlMs?: number) =>
    provider.create({ idempotencyKey: `${tag}-${name}`, workspaceDir: workspace, labels, ttlMs });
  await openEpisode(`ep-open-${tag}`);
  await closedEpisode(`ep-closed-${tag}`);
  const sandboxes = {
    open: await make('open', { episode: `ep-open-${tag}` }),
    closed: await make('closed', { episode: `ep-closed-${tag}` }),
    neverStarted: await make('never', { episode: `ep-never-${tag}` }),
    unlabelled: await make('unlabelled', {}),
    expired: await make('expired', { episode: `ep-open-${tag}` }, 1),
  };
  await sleep(5); // the 1 ms TTL has passed
  return sandboxes;
}

beforeAll(async () => {
  workspace = await tempDir('janitor-ws');
  dirs.push(workspace);
  await writeTree(workspace, { 'a.txt': 'a\n' });
  connection = await Connection.connect({ address: inject('temporalAddress') });
  client = new Client({ connection });
  store = await openStore(join(workspace, '..', `janitor-store-${run}.sqlite`));
});

afterAll(async () => {
  for (const [p] of providers) await removeAllSandboxes(p);
  await removeDirs(dirs);
  await store?.close();
  await connection?.close();
});

describe('sandbox janitor', () => {
  it('removes expired sandboxes and those of closed episodes, and keeps the rest', async () => {
    const provider = await newProvider();
    const s = await seed(provider, `direct-${run}`);
    expect(await isEpisodeOpen(client, `ep-open-direct-${run}`)).toBe(true);

    const result = await sweepSandboxes(provider, (id) => isEpisodeOpen(client, id));
    expect(result.expired).toEqual([s.expired.id]);
    expect(result.closed.sort()).toEqual([s.closed.id, s.neverStarted.id].sort());
    expect((await provider.list()).map((i) => i.id).sort()).toEqual(
      [s.open.id, s.unlabelled.id].sort(),
    );
  });

  it('sweeps on worker start what a crashed predecessor left, registers the host, and keeps one schedule', async () => {
    const provider = await newProvider();
    const s = await seed(provider, `start-${run}`);
    // The predecessor crashed mid-create: a directory without meta.json, older than the grace.
    const rootDir = providers.at(-1)![1];
    const halfMade = join(rootDir, 'sb-00000000000000bb');
    await mkdir(join(halfMade, 'base'), { recursive: true });
    const taskQueue = `janitor-start-${run}`;
    const queues = { taskQueue, hostQueue: hostQueueOf(taskQueue, 'a') };
    const late = new BubblewrapProvider({ rootDir, halfMadeGraceMs: 0 });
    const state = await seedAgentState(`start-${run}`);
    const options = { provider: late, agentStateDir: state.dir, store, hostId: 'a' };

    const first = await startJanitor(connection, 'default', queues, options);
    expect(first.swept.expired.sort()).toEqual([s.expired.id, 'sb-00000000000000bb'].sort());
    expect(first.swept.closed.sort()).toEqual([s.closed.id, s.neverStarted.id].sort());
    expect(first.swept.agentState).toEqual(state.closed);
    expect((await readdir(state.dir)).sort()).toEqual(state.kept);

    // Again, and from a second host: one schedule, and both hosts in the store's registry.
    const again = await startJanitor(connection, 'default', queues, options);
    const second = await registerHost(store, { hostQueue: hostQueueOf(taskQueue, 'b'), hostId: 'b' });
    const hosts = (await store.listRegistrations('host', HOST_TTL_MS)).filter((r) => r.id.startsWith(taskQueue));
    expect(hosts.map((r) => [r.id, r.address])).toEqual([
      [hostQueueOf(taskQueue, 'a'), 'a'],
      [hostQueueOf(taskQueue, 'b'), 'b'],
    ]);
    for (const h of [first, again, second]) h.stop();
    const handle = client.schedule.getHandle(janitorScheduleId(taskQueue));
    const action = (await handle.describe()).action;
    expect(action.type === 'startWorkflow' && action.workflowType).toBe('janitorWorkflow');
    await handle.delete();
  });

  it('runs as a schedule whose workflow sweeps every registered host and forgets those not seen within the TTL', async () => {
    installWorkerRuntime();
    const taskQueue = `janitor-sched-${run}`;
    const hosts = ['h1', 'h2'];
    const native = await NativeConnection.connect({ address: inject('temporalAddress') });
    const seeded = [];
    const activitiesOf = async (sandbox: BubblewrapProvider, agentStateDir: string) =>
      createJanitorActivities({ sandbox, agentStateDir, store, hostTtlMs: HOST_TTL_MS });
    const workers: Worker[] = [
      await Worker.create({
        connection: native,
        taskQueue,
        workflowBundle: await bundleWorkflows(),
        activities: await activitiesOf(await newProvider(), await tempDir('agent-state-shared')),
      }),
    ];
    for (const host of hosts) {
      const provider = await newProvider();
      const tag = `${host}-${run}`;
      seeded.push({ provider, sandboxes: await seed(provider, tag), state: await seedAgentState(tag) });
      workers.push(
        await Worker.create({
          connection: native,
          taskQueue: hostQueueOf(taskQueue, host),
          activities: await activitiesOf(provider, seeded.at(-1)!.state.dir),
        }),
      );
      (await registerHost(store, { hostQueue: hostQueueOf(taskQueue, host), hostId: host })).stop();
    }
    // A host last seen longer ago than the TTL: forgotten, never swept (no worker polls its queue).
    const gone = hostQueueOf(taskQueue, 'gone');
    await store.register({ kind: 'host', id: gone, address: 'gone', lastSeenAt: Date.now() - 2 * HOST_TTL_MS });
    await ensureJanitorSchedule(client, { taskQueue, intervalMs: 3_600_000 });
    const running = Promise.all(workers.map((w) => w.run()));
    const handle = client.schedule.getHandle(janitorScheduleId(taskQueue));
    try {
      await handle.trigger();
      let workflowId: string | undefined;
      while (!workflowId) {
        workflowId = (await handle.describe()).info.recentActions[0]?.action.workflow.workflowId;
        if (!workflowId) await sleep(100);
      }
      const reports: JanitorHostReport[] = await client.workflow.getHandle(workflowId).result();
      expect(reports.map((r) => r.hostQueue)).toEqual(hosts.map((h) => hostQueueOf(taskQueue, h)));
      for (const [i, { provider, sandboxes: s, state }] of seeded.entries()) {
        expect(reports[i]!.error).toBeUndefined();
        expect(reports[i]!.closed!.sort()).toEqual([s.closed.id, s.neverStarted.id].sort());
        expect((await provider.list()).map((x) => x.id).sort()).toEqual(
          [s.open.id, s.unlabelled.id].sort(),
        );
        expect(reports[i]!.agentState).toEqual(state.closed);
        expect((await readdir(state.dir)).sort()).toEqual(state.kept);
      }
      const known = await store.listRegistrations('host', Number.MAX_SAFE_INTEGER);
      expect(known.map((r) => r.id)).not.toContain(gone);
    } finally {
      await handle.delete();
      for (const w of workers) w.shutdown();
      await running;
      await native.close();
    }
  });
});
