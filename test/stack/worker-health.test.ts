import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AdmissionControl } from '../../scheduler/index.js';
import { ConfigSchema } from '../../stack/config.js';
import { startEngineHealth, type EngineHealth } from '../../stack/engine-health.js';
import { openStore, type Store } from '../../trajectory/index.js';
import { startTestEngines, type TestEngines } from '../helpers/stack.js';

/** A port nothing listens on: an engine that is down. */
async function deadPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === 'object' && address ? address.port : 0;
}

let engines: TestEngines;
let store: Store;
let health: EngineHealth | undefined;

beforeAll(async () => {
  engines = await startTestEngines({ count: 1 });
  store = await openStore(path.join(mkdtempSync(path.join(inject('testDataRoot'), 'health-')), 'trajectories.sqlite'));
});

afterAll(async () => {
  await health?.stop();
  await store?.close();
  await engines?.close();
});

describe("a standalone worker's view of engine health", () => {
  it('admits episodes only to the live engine when another is down', async () => {
    const live = engines.instances[0]!;
    const dead = { name: 'dead', kind: 'vllm' as const, url: `http://127.0.0.1:${await deadPort()}`, kvCapacityTokens: 200_000 };
    const config = ConfigSchema.parse({});
    // The dead engine first: with equal load admission would otherwise pick it.
    const instances = [dead, live];
    health = await startEngineHealth(instances, config.routing);
    expect(health.isAvailable('dead')).toBe(false);
    expect(health.isAvailable(live.name)).toBe(true);

    const admission = await AdmissionControl.create(store, instances, config.admission, health.isAvailable);
    const slots = Math.floor(live.kvCapacityTokens / config.admission.episodeTokens);
    const homes: string[] = [];
    for (let i = 0; i < slots; i++) homes.push((await admission.tryAdmit(`b/ep-${i}`))!.instance);
    expect(new Set(homes)).toEqual(new Set([live.name]));
    // The live engine is full; the dead one's free slots are never offered.
    expect(await admission.tryAdmit('b/ep-extra')).toBeUndefined();
  });
});
