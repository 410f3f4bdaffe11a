import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import {
  GatewayProcessError,
  startGatewayProcesses,
  type GatewaysRole,
} from '../../stack/roles/gateway-processes.js';
import { openConfiguredStore } from '../../stack/store.js';
import type { Store } from '../../trajectory/index.js';
import {
  closeTestSession,
  openTestSession,
  SHELL_TOOLS,
  TEST_ADMIN_TOKEN,
  widgetScript,
} from '../helpers/gateway.js';
import { peakOnEngine, startLongCall } from '../helpers/engine-peak.js';
import { parseExposition, total } from '../helpers/metrics-scrape.js';
import { spawnGatewayRole } from '../helpers/processes.js';
import { createMetrics, type RolloutMetrics } from '../../telemetry/metrics.js';
import { testConfig, testEngineTokenizer } from '../helpers/stack.js';
import { isRunning, procStat } from '../../sandbox/proc-stat.js';

const tools = SHELL_TOOLS;
const script = { wanderProbability: 0, tasks: [widgetScript()] };
const replicaId = (i: number) => `${os.hostname()}:0/p${i}`;

let engine: EngineSim;
let store: Store;
let gateways: GatewaysRole;
/** The parent's metrics: the placement the processes share counts its decisions there. */
const metrics = createMetrics();
const logged: string[] = [];
/** Every pid a gateway process had, restarts included. */
const seenPids = new Set<number>();

/** The sum of the samples of `name` in `from`'s registry now. */
async function counted(from: RolloutMetrics, name: string): Promise<number> {
  return total(parseExposition(await from.registry.metrics()), name);
}

function config(gateway: Record<string, unknown> = {}, on: { sim: EngineSim; kvCapacityTokens: number } = { sim: engine, kvCapacityTokens: 200_000 }) {
  return testConfig({
    engines: [{ name: 'e0', kind: 'vllm', url: on.sim.url, kvCapacityTokens: on.kvCapacityTokens }],
    gateway: {
      port: 0,
      processes: 2,
      adminToken: TEST_ADMIN_TOKEN,
      sessionOwnershipTtlMs: 2_000,
      ...gateway,
    },
  });
}

/** The live processes `parent` started from gateway-child.ts (its children, by /proc). */
function gatewayChildren(parent = process.pid): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      const stat = procStat(pid);
      if (stat?.ppid !== parent || stat.state === 'Z') return false;
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('gateway-child.ts');
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function chat(
  url: string,
  key: string,
  messages: object[],
): Promise<{ status: number; json: any }> {
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ messages, tools }),
  });
  return { status: r.status, json: await r.json() };
}

/** One agent conversation, each turn sent to the URL given. */
async function converse(sessionId: string, urls: string[]): Promise<any[]> {
  const key = await openTestSession(urls[0]!, sessionId);
  const messages: object[] = [
    { role: 'system', content: 'You are an agent.' },
    { role: 'user', content: 'Fix the widget please.' },
  ];
  const answers: any[] = [];
  for (const url of urls) {
    const r = await chat(url, key, messages);
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    answers.push(r.json);
    const message = r.json.choices[0].message;
    messages.push(message);
    for (const call of message.tool_calls ?? [])
      messages.push({ role: 'tool', tool_call_id: call.id, content: 'ok' });
  }
  return answers;
}

beforeAll(async () => {
  const tokenizer = await testEngineTokenizer();
  engine = await startEngineSim({ tokenizer, script, timeScale: 0 });
  const first = config({ nodeArgs: ['--max-old-space-size=3072'] });
  // The store the processes share, opened here first: the test reads what they wrote.
  store = await openConfiguredStore(first);
  gateways = await startGatewayProcesses(first, { log: (line) => logged.push(line), metrics });
  for (const pid of gateways.pids()) seenPids.add(pid);
});

afterAll(async () => {
  await gateways?.stop();
  await store?.close();
  await engine?.close();
});

describe('gateway.processes: 2 on one SQLite store', () => {
  it('runs two processes on distinct URLs, registered in the store as replicas <hostname:port>/p<i>', async () => {
    expect(gateways.urls).toHaveLength(2);
    expect(new Set(gateways.urls).size).toBe(2);
    const pids = gateways.pids();
    expect(pids).toHaveLength(2);
    expect(pids).not.toContain(process.pid);
    expect(new Set(gatewayChildren())).toEqual(new Set(pids));
    const registered = (await store.listRegistrations('gateway', 60_000)).map((r) => ({
      id: r.id,
      address: r.address,
    }));
    expect(registered.sort((a, b) => a.id.localeCompare(b.id))).toEqual([
      { id: replicaId(0), address: gateways.urls[0] },
      { id: replicaId(1), address: gateways.urls[1] },
    ]);
    for (const url of gateways.urls) expect((await fetch(`${url}/health`)).status).toBe(200);
    // Garbage is collected on each process's own thread (gateway.singleThreadedGc, default true),
    // in a young generation of gateway.maxSemiSpaceMiB (default 64); gateway.nodeArgs come after.
    for (const pid of pids) expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')).toEqual(expect.arrayContaining(['--single-threaded-gc', '--max-semi-space-size=64', '--max-old-space-size=3072']));
  });

  it('serves a session opened on one process and called on the other by forwarding: one chain, token-exact', async () => {
    const [a, b] = gateways.urls as [string, string];
    const placed = await counted(metrics, 'rollout_router_decisions_total');
    const answers = await converse('procs-forward', [a, b, b]);
    // Every call was placed by the placement in the parent (over the processes' IPC channels).
    expect((await counted(metrics, 'rollout_router_decisions_total')) - placed).toBe(3);
    expect(answers.at(-1).choices[0].message.content).toBe('The widget is fixed.');
    expect((await store.getSession('procs-forward'))?.owner).toBe(replicaId(0));
    const turns = await store.loadTurns('procs-forward');
    expect(turns.map((t) => [t.chainIndex, t.seq])).toEqual([
      [0, 0],
      [0, 1],
      [0, 2],
    ]);
    // The last prompt is the stored tokens plus only the new messages: no re-render, no second chain.
    const [t0, t1, t2] = turns as [(typeof turns)[0], (typeof turns)[0], (typeof turns)[0]];
    expect(answers.at(-1).usage.prompt_tokens).toBe(
      t0.promptDelta.length +
        t0.sampled.length +
        t1.promptDelta.length +
        t1.sampled.length +
        t2.promptDelta.length,
    );
    expect(answers.at(-1).usage.completion_tokens).toBe(t2.sampled.length);
    expect(await closeTestSession(b, 'procs-forward')).toMatchObject({ turns: 3, chains: 1 });
  });

  it('restarts a process killed with SIGKILL on the same URL, logged, and it serves again', async () => {
    const [, killed] = gateways.pids() as [number, number];
    process.kill(killed, 'SIGKILL');
    await expect
      .poll(() => logged.join('\n'), { timeout: 60_000 })
      .toMatch(/gateway process p1 restarted/);
    expect(logged.join('\n')).toMatch(
      new RegExp(
        `gateway process p1 \\(pid ${killed}, ${gateways.urls[1]}\\) exited unexpectedly \\(SIGKILL\\)`,
      ),
    );
    const [, restarted] = gateways.pids() as [number, number];
    expect(restarted).not.toBe(killed);
    seenPids.add(restarted);
    expect(isRunning(killed)).toBe(false);
    // Its sessions and new ones are served at the URL the clients know.
    const [a, b] = gateways.urls as [string, string];
    const answers = await converse('procs-after-restart', [b, a, b]);
    expect(answers.at(-1).choices[0].message.content).toBe('The widget is fixed.');
    expect((await store.getSession('procs-after-restart'))?.owner).toBe(replicaId(1));
  });

  it('stop() leaves no process behind', async () => {
    await gateways.stop();
    expect(gatewayChildren()).toEqual([]);
    for (const pid of seenPids) expect(isRunning(pid)).toBe(false);
  });
});

describe('a gateway process that cannot start', () => {
  let taken: Server;
  beforeAll(async () => {
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => taken.close(() => resolve())));

  it('fails the start with an error naming the process, and stops the others', async () => {
    const port = (taken.address() as { port: number }).port;
    // p0 gets the taken port; p1, on the next one, may well start, and must be stopped again.
    const start = startGatewayProcesses(config({ port }), { log: (line) => logged.push(line) });
    await expect(start).rejects.toThrow(GatewayProcessError);
    await expect(start).rejects.toThrow(/gateway process p0 failed to start: .*EADDRINUSE/);
    expect(gatewayChildren()).toEqual([]);
  });
});

describe('`rollout gateway` with gateway.processes: 2', () => {
  it("announces both URLs and the router's metrics (gateway.metricsPort), and its processes exit when it is killed with SIGKILL", async () => {
    const role = await spawnGatewayRole(config({ metricsPort: 0 }));
    try {
      const announced = /gateway listening on (\S+) ([^\s;]+); router metrics at ([^\s;]+)/;
      await expect.poll(() => announced.exec(role.output())).toBeTruthy();
      const [a, b, metricsUrl] = announced.exec(role.output())!.slice(1) as [string, string, string];
      for (const url of [a, b]) expect((await fetch(`${url}/health`)).status).toBe(200);
      const scrape = async (token?: string) => fetch(metricsUrl, { headers: token ? { authorization: `Bearer ${token}` } : {} });
      expect((await scrape()).status).toBe(401);
      const decisions = async () => total(parseExposition(await (await scrape(TEST_ADMIN_TOKEN)).text()), 'rollout_router_decisions_total');
      const before = await decisions();
      await converse('role-metrics', [a, b]);
      // Both processes' calls were placed in the parent, and it serves what it counted.
      expect((await decisions()) - before).toBe(2);
      const children = gatewayChildren(role.child.pid);
      expect(children).toHaveLength(2);
      role.child.kill('SIGKILL');
      // Their IPC channel closes with the parent: each stops by itself.
      await expect.poll(() => children.filter((pid) => isRunning(pid)), { timeout: 30_000 }).toEqual([]);
    } finally {
      role.child.kill('SIGKILL');
    }
  });
});

describe('gateway.processes: 2 placing through the parent over IPC', () => {
  /** Small: one call (its prompt + max_tokens) takes more than half of it, so only one fits at a time. */
  const KV = 4_000;
  const long = { content: 'Write it long', maxTokens: 2_500, homeInstance: 'e0' };
  const longScript = {
    wanderProbability: 0,
    tasks: [
      { taskId: 'long', match: 'Write it long', solve: [{ thought: 'Hold.', tool: null, content: 'la '.repeat(400) }] },
      // Five times as long: it holds the engine while the test drops the calls waiting behind it.
      { taskId: 'hold', match: 'Hold the engine', solve: [{ thought: 'Hold.', tool: null, content: 'la '.repeat(2_000) }] },
    ],
  };
  let sim: EngineSim;
  let role: GatewaysRole;
  const shared = createMetrics();
  const held = () => counted(shared, 'rollout_router_held_calls');
  const p1Restarts = () => logged.filter((line) => line.startsWith('gateway process p1 restarted')).length;

  beforeAll(async () => {
    // About 400 tokens at a quarter of real time: each call runs for a good fraction of a second.
    sim = await startEngineSim({ tokenizer: await testEngineTokenizer(), script: longScript, timeScale: 0.25, kvCapacityTokens: KV });
    role = await startGatewayProcesses(config({}, { sim, kvCapacityTokens: KV }), { log: (line) => logged.push(line), metrics: shared });
  });
  afterAll(async () => {
    await role?.stop();
    await sim?.close();
  });

  /** A long call through `url`; with `hold`, the blocker's five times longer one. */
  const startLong = (url: string, sessionId: string, signal?: AbortSignal, hold = false) =>
    startLongCall(url, sessionId, hold ? { ...long, content: 'Hold the engine' } : long, signal);

  it('admits no more working sets to the engine than its KV capacity across both processes', async () => {
    expect(await peakOnEngine(sim, role.urls, 2, 'ipc-shared', long)).toBe(1);
    expect(await held()).toBe(0);
  });

  it("drops a held call in the parent when its client leaves, and when its process dies", async () => {
    const [a, b] = role.urls as [string, string];
    const heldBefore = await counted(shared, 'rollout_router_held_calls_total');
    const blocker = await startLong(a, 'ipc-blocker', undefined, true);
    await expect.poll(() => sim.stats().running, { timeout: 10_000 }).toBe(1);
    const abort = new AbortController();
    const left = await startLong(b, 'ipc-left', abort.signal);
    await expect.poll(held, { timeout: 10_000 }).toBe(1);
    abort.abort();
    expect(await left.done).toEqual({ error: 'AbortError' });
    await expect.poll(held).toBe(0);
    // Dropped, not let through when the blocker ended: that is still running.
    expect(sim.stats().running).toBe(1);
    // Held again, then its process is killed: its IPC channel closes and the parent drops the call.
    const orphan = await startLong(b, 'ipc-orphan');
    await expect.poll(held, { timeout: 10_000 }).toBe(1);
    const restarted = p1Restarts();
    process.kill(role.pids()[1]!, 'SIGKILL');
    await expect.poll(held).toBe(0);
    expect(sim.stats().running).toBe(1);
    expect(await orphan.done).toEqual({ error: 'TypeError' });
    expect(await counted(shared, 'rollout_router_held_calls_total') - heldBefore).toBe(2);
    expect(await blocker.done).toMatchObject({ status: 200 });
    await expect.poll(p1Restarts, { timeout: 60_000 }).toBe(restarted + 1);
  });

  it('releases the placements of a process that died at once, not a lease (15 s) later', async () => {
    const [a, b] = role.urls as [string, string];
    const heldBefore = await counted(shared, 'rollout_router_held_calls_total');
    const dying = await startLong(b, 'ipc-dying', undefined, true);
    await expect.poll(() => sim.stats().running, { timeout: 10_000 }).toBe(1);
    const pid = role.pids()[1]!;
    process.kill(pid, 'SIGKILL');
    await expect.poll(() => logged.join('\n')).toMatch(new RegExp(`gateway process ${pid}: its channel closed; released the 1 placement\\(s\\) it held`));
    expect(await dying.done).toEqual({ error: 'TypeError' });
    // Its KV reservation is gone: the next call is admitted without waiting.
    expect(await (await startLong(a, 'ipc-after-death')).done).toMatchObject({ status: 200 });
    expect(await counted(shared, 'rollout_router_held_calls_total')).toBe(heldBefore);
  });
});
