import type { FastifyInstance } from 'fastify';
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import { BackendError } from '../../gateway/backends/backend.js';
import { HomePolicy } from '../../scheduler/home-policy.js';
import { isTimeout, probeHealth } from '../../scheduler/probe.js';
import {
  InstanceRegistry,
  type RegisteredInstance,
  type RegistryOptions,
} from '../../scheduler/registry.js';
import { createRouter, Router } from '../../scheduler/router.js';
import { PrefixIndex } from '../../scheduler/routing/prefix-index.js';
import { PROJECT_ROOT } from '../../stack/temporal-binary.js';
import type { Store } from '../../trajectory/index.js';
import { waitForExit } from '../helpers/processes.js';
import { openTestSession, sessionInfo, startTestGateway, tempStore } from '../helpers/gateway.js';
import { testEngineTokenizer } from '../helpers/stack.js';

/** Health checked only when a test asks (and once at start): each test drives the checks it needs. */
const MANUAL: RegistryOptions = {
  healthIntervalMs: 600_000,
  metricsIntervalMs: 600_000,
  probeTimeoutMs: 100,
  unhealthyAfterFailures: 2,
};

/** Holds the event loop, as a gateway busy encoding and copying does. */
function busyWait(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

/** engine-sim as its own process, so it answers while this process's loop is stalled. */
async function spawnEngineSim(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(PROJECT_ROOT, 'engine-sim', 'main.ts'), '--time-scale', '0'],
    {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      output += d.toString();
      const found = /http:\/\/\S+/.exec(output)?.[0];
      if (found) resolve(found);
    });
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    child.once('exit', (code) => reject(new Error(`engine-sim exited (${code}): ${output}`)));
  });
  return { url, child };
}

interface HealthStall {
  url: string;
  /** `/health` requests received (none is ever answered). */
  healthRequests: number;
  /** Bytes of generation answers passed on from the engine. */
  generationBytes: number;
  close(): Promise<void>;
}

/** A real HTTP front of an engine that proxies everything but never answers `/health`. */
async function startHealthStall(target: string): Promise<HealthStall> {
  const hung = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    if (req.url === '/health') {
      stall.healthRequests += 1;
      hung.add(res);
      return;
    }
    const upstream = http.request(
      `${target}${req.url}`,
      { method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        if (req.url?.startsWith('/v1/completions'))
          answer.on('data', (chunk: Buffer) => (stall.generationBytes += chunk.length));
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const stall: HealthStall = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    healthRequests: 0,
    generationBytes: 0,
    async close() {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return stall;
}

const vllm = (name: string, url: string): RegisteredInstance => ({ name, kind: 'vllm', url });

/** A long answer, streamed token by token while the test checks health. */
const LONG_ANSWER = Array.from({ length: 120 }, (_, i) => `word${i}`).join(' ');
const script = { answers: [{ when: ['Write at length'], content: LONG_ANSWER }] };

let sim: EngineSim;
let slowSim: EngineSim;
let store: Store;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  const tokenizer = await testEngineTokenizer();
  sim = await startEngineSim({ tokenizer, script, timeScale: 0 });
  // A few ms a token: the long answer streams for about a second.
  slowSim = await startEngineSim({ tokenizer, script, timeScale: 1 });
  store = tempStore('gw-health-');
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

afterAll(async () => {
  await sim?.close();
  await slowSim?.close();
  store?.close();
});

async function gatewayOver(router: Router, engines: RegisteredInstance[]): Promise<string> {
  const { gateway, url } = await startTestGateway(store, engines, router);
  closers.push(() => (gateway as FastifyInstance).close());
  return url;
}

let sessions = 0;
/** One non-streaming chat call in a new session at home on `home`; its status. */
async function chat(url: string, home: string, content = 'Hello there.'): Promise<number> {
  const key = await openTestSession(
    url,
    `health-${(sessions += 1)}`,
    sessionInfo({ homeInstance: home }),
  );
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ messages: [{ role: 'user', content }] }),
  });
  await r.arrayBuffer();
  return r.status;
}

describe('engine health under a stalled event loop', () => {
  it('fails no check whose timeout fired while the loop was blocked, and the next call succeeds', async () => {
    const engine = await spawnEngineSim();
    closers.push(async () => {
      engine.child.kill('SIGTERM');
      await waitForExit(engine.child);
    });
    // Two names for one engine: a timeout may then take one out (the other stays as the last healthy).
    const engines = [vllm('a', engine.url), vllm('b', engine.url)];
    const router = createRouter(engines, { policy: 'home', ...MANUAL, healthIntervalMs: 50 });
    const down: string[] = [];
    router.registry.onDown((name) => down.push(name));
    const url = await gatewayOver(router, engines);
    for (let round = 0; round < 3; round++) {
      const checks = Promise.all(engines.map((e) => router.registry.checkHealth(e.name)));
      // Longer than probeTimeoutMs x unhealthyAfterFailures, with the periodic checks due meanwhile.
      busyWait(400);
      expect(await checks).toEqual([true, true]);
    }
    expect(down).toEqual([]);
    expect(await chat(url, 'a')).toBe(200);
  });

  it('still fails a check of an engine that never answers once the loop runs again', async () => {
    const stall = await startHealthStall(sim.url);
    closers.push(() => stall.close());
    const outcome = probeHealth(`${stall.url}/health`, {
      timeoutMs: 50,
      stallMs: 10,
      maxExtensions: 2,
    });
    busyWait(200);
    expect(await outcome).toBe('timedOut');
    expect(stall.healthRequests).toBe(1);
  });
});

describe('engine health while the engine answers streams', () => {
  it('keeps an engine whose /health hangs in while it streams a generation, and takes it out once it stops', async () => {
    const stall = await startHealthStall(slowSim.url);
    closers.push(() => stall.close());
    let clock = 1_000_000;
    const engines = [vllm('busy', stall.url), vllm('spare', sim.url)];
    const registry = new InstanceRegistry(engines, {
      ...MANUAL,
      streamGraceMs: 10_000,
      now: () => clock,
    });
    const router = new Router(registry, new HomePolicy(), new PrefixIndex(64));
    const url = await gatewayOver(router, engines);

    // Non-streaming: the gateway still sees every chunk the engine sends.
    const call = chat(url, 'busy', 'Write at length about widgets.');
    await expect.poll(() => stall.generationBytes).toBeGreaterThan(0);
    for (let i = 0; i < 3; i++) expect(await registry.checkHealth('busy')).toBe(true);
    expect(await call).toBe(200);
    // The first may have joined the check the router's start began: three at least reached /health.
    expect(stall.healthRequests).toBeGreaterThanOrEqual(3);
    expect(registry.isHealthy('busy')).toBe(true);

    // Past the grace of its last data, the hanging checks count again.
    clock += 10_001;
    await registry.checkHealth('busy');
    expect(await registry.checkHealth('busy')).toBe(false);
    expect(await chat(url, 'busy')).toBe(200);
  });
});

describe('the last healthy engine', () => {
  it('stays in when only timeouts are held against it, while a timing-out engine beside a healthy one goes out', async () => {
    const stall = await startHealthStall(sim.url);
    closers.push(() => stall.close());
    const alone = createRouter([vllm('only', stall.url)], { policy: 'home', ...MANUAL });
    const url = await gatewayOver(alone, [vllm('only', stall.url)]);
    for (let i = 0; i < 3; i++) expect(await alone.registry.checkHealth('only')).toBe(true);
    expect(stall.healthRequests).toBeGreaterThanOrEqual(3);
    expect(await chat(url, 'only')).toBe(200);

    const pair = new InstanceRegistry([vllm('slow', stall.url), vllm('fine', sim.url)], MANUAL);
    closers.push(() => pair.close());
    const down: string[] = [];
    pair.onDown((name) => down.push(name));
    await pair.checkHealth('slow');
    expect(await pair.checkHealth('slow')).toBe(false);
    expect(await pair.checkHealth('fine')).toBe(true);
    expect(down).toEqual(['slow']);
  });

  it('is taken out by a call that timed out only while another engine is healthy', async () => {
    const registry = new InstanceRegistry([vllm('x', sim.url), vllm('y', sim.url)], MANUAL);
    closers.push(() => registry.close());
    registry.markDown('x', true);
    expect(registry.isHealthy('x')).toBe(false);
    registry.markDown('y', true);
    expect(registry.isHealthy('y')).toBe(true);
    registry.markDown('y');
    expect(registry.isHealthy('y')).toBe(false);
  });

  it('tells timeouts from refused connections in real fetch errors', async () => {
    const stall = await startHealthStall(sim.url);
    closers.push(() => stall.close());
    const timedOut = await fetch(`${stall.url}/health`, { signal: AbortSignal.timeout(50) }).catch(
      (e: unknown) => e,
    );
    expect(isTimeout(timedOut)).toBe(true);
    expect(isTimeout(new BackendError('engine unreachable', 503, { cause: timedOut }))).toBe(true);
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const refused = await fetch(`http://127.0.0.1:${port}/health`).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Error);
    expect(isTimeout(refused)).toBe(false);
  });
});

describe('a dead engine', () => {
  it('is taken out, even as the last healthy one, and comes back when its check passes', async () => {
    const tokenizer = await testEngineTokenizer();
    let engine = await startEngineSim({ tokenizer, timeScale: 0 });
    const port = engine.port;
    closers.push(() => engine.close());
    const engines = [vllm('e', engine.url)];
    const router = createRouter(engines, { policy: 'home', ...MANUAL });
    const url = await gatewayOver(router, engines);
    expect(await chat(url, 'e')).toBe(200);

    await engine.close();
    await router.registry.checkHealth('e');
    expect(await router.registry.checkHealth('e')).toBe(false);
    expect(await chat(url, 'e')).toBe(503);

    engine = await startEngineSim({ tokenizer, timeScale: 0, port });
    expect(await router.registry.checkHealth('e')).toBe(true);
    expect(await chat(url, 'e')).toBe(200);
  });
});
