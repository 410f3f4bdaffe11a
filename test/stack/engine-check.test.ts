import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import { ConfigSchema } from '../../stack/config.js';
import { checkEngines, EngineModelError } from '../../stack/engine-check.js';
import { startGateway } from '../../stack/roles/gateway.js';
import { tempStore } from '../helpers/gateway.js';
import { startScriptedVllm, type ScriptedVllm } from '../helpers/scripted-vllm.js';
import { testCodec, testEngineTokenizer } from '../helpers/stack.js';

const MODEL = 'Qwen/Qwen3-8B';

/** A port nothing listens on: bound, read, released. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('engine sanity at start-up', () => {
  let sim: EngineSim;
  let other: EngineSim;
  let scripted: ScriptedVllm;

  beforeAll(async () => {
    const tokenizer = await testEngineTokenizer();
    sim = await startEngineSim({ tokenizer, modelName: MODEL, kvCapacityTokens: 64_000, blockSize: 16, timeScale: 0 });
    other = await startEngineSim({ tokenizer, modelName: 'org/other-model', timeScale: 0 });
    scripted = await startScriptedVllm([MODEL]);
  });

  afterAll(async () => {
    await Promise.all([sim?.close(), other?.close(), scripted?.close()]);
  });

  it("reads an engine's max_model_len and, where the configuration leaves it unset, its KV capacity", async () => {
    const [unset, configured] = await checkEngines(
      [
        { name: 'a', kind: 'vllm', url: sim.url },
        { name: 'b', kind: 'vllm', url: sim.url, kvCapacityTokens: 1_000 },
      ],
      MODEL,
      () => {},
    );
    expect(unset).toMatchObject({ name: 'a', kvCapacityTokens: 64_000, maxModelLen: 64_000 });
    expect(configured).toMatchObject({ name: 'b', kvCapacityTokens: 1_000, maxModelLen: 64_000 });
  });

  it("reads an SGLang engine's KV capacity from /get_server_info", async () => {
    const [engine] = await checkEngines([{ name: 's', kind: 'sglang', url: sim.url }], MODEL, () => {});
    expect(engine).toMatchObject({ kvCapacityTokens: 64_000, maxModelLen: 64_000 });
  });

  it('leaves unknown what an engine does not report', async () => {
    const [engine] = await checkEngines([{ name: 'a', kind: 'vllm', url: scripted.url }], MODEL, () => {});
    expect(engine).toEqual({ name: 'a', kind: 'vllm', url: scripted.url });
  });

  it('asks an engine configured for KV events for its publisher, and routes on the estimate when it names none', async () => {
    const logged: string[] = [];
    const given = { endpoint: 'tcp://10.0.0.5:5557', topic: 'kv' };
    const [asked, configured] = await checkEngines(
      [
        { name: 'a', kind: 'vllm', url: sim.url, kvEvents: {} },
        { name: 'b', kind: 'vllm', url: sim.url, kvEvents: given },
      ],
      MODEL,
      (line) => logged.push(line),
    );
    // engine-sim publishes no KV events (no /kv_event_sources): logged, and the events are left out.
    expect(asked).not.toHaveProperty('kvEvents');
    expect(logged).toEqual([expect.stringMatching(/^engine a: its KV events are not used \(.*kv_event_sources answered 404.*\); the router estimates its cache$/)]);
    expect(configured!.kvEvents).toEqual(given);
  });

  it('names the served models when the configured one is not among them', async () => {
    const check = checkEngines([{ name: 'a', kind: 'vllm', url: other.url }], MODEL, () => {});
    await expect(check).rejects.toThrow(EngineModelError);
    await expect(check).rejects.toThrow(/engine a .* does not serve model.name "Qwen\/Qwen3-8B"; it serves "org\/other-model"/);
  });

  it('keeps an engine that is down at start as configured, and says so', async () => {
    const logged: string[] = [];
    const url = `http://127.0.0.1:${await deadPort()}`;
    const [engine] = await checkEngines([{ name: 'late', kind: 'vllm', url, kvCapacityTokens: 5_000 }], MODEL, (line) => logged.push(line));
    expect(engine).toEqual({ name: 'late', kind: 'vllm', url, kvCapacityTokens: 5_000 });
    expect(logged).toEqual([expect.stringContaining('engine late: not reachable at start')]);
  });

  it('stops the gateway role from starting over an engine serving another model', async () => {
    const config = ConfigSchema.parse({
      dataDir: mkdtempSync(path.join(os.tmpdir(), 'engine-check-')),
      model: { name: MODEL },
      engines: [{ name: 'e0', url: other.url }],
      gateway: { port: 0, adminToken: 'test-admin-token' },
    });
    const store = tempStore('engine-check-');
    try {
      await expect(startGateway(config, { store, codec: await testCodec() })).rejects.toThrow(EngineModelError);
    } finally {
      await store.close();
    }
  });
});
