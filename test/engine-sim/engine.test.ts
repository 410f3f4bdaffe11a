import { describe, expect, it } from 'vitest';
import { Engine, type EngineConfig } from '../../engine-sim/engine.js';

const config = (over: Partial<EngineConfig> = {}): EngineConfig => ({
  kvCapacityTokens: 1024,
  blockSize: 16,
  maxBatchTokens: 64,
  timeModel: { c0Ms: 6, prefillMsPerToken: 1 / 35, decodeNsPerContextToken: 39 },
  timeScale: 0,
  ...over,
});

function run(engine: Engine, promptLength: number, outputLength: number, maxTokens = outputLength) {
  const progress: number[] = [];
  let cached = -1;
  let end: (outcome: string) => void = () => {};
  const done = new Promise<string>((resolve) => (end = resolve));
  engine.submit(
    Array.from({ length: promptLength }, (_, i) => i + 1),
    { tokenIds: Array.from({ length: outputLength }, (_, i) => 500 + i), maxTokens },
    { onAdmitted: (c) => (cached = c), onTokens: (n) => progress.push(n), onEnd: end },
  );
  return { progress, done, cached: () => cached };
}

describe('Engine', () => {
  it('prefills a long prompt in chunks of the step budget, then decodes one token per step', async () => {
    const engine = new Engine(config());
    const r = run(engine, 300, 5);
    expect(await r.done).toBe('finished');
    expect(r.progress).toEqual([1, 2, 3, 4, 5]);
    // ceil(300 / 64) = 5 prefill steps (the last one samples the first token), then 4 decodes.
    expect(engine.stats()).toMatchObject({
      steps: 9,
      promptTokens: 300,
      generatedTokens: 5,
      requestsFinished: 1,
      kvUsedTokens: 0,
    });
  });

  it('queues requests that do not fit in KV until running ones free their blocks', async () => {
    const engine = new Engine(config({ kvCapacityTokens: 256 }));
    const a = run(engine, 100, 20, 100); // 13 blocks of 16 reserved
    const b = run(engine, 80, 3, 100); // needs 12 more: only 3 left
    await Promise.resolve(); // the first step starts at the end of the tick
    expect(engine.stats()).toMatchObject({ running: 1, waiting: 1 });
    expect(await a.done).toBe('finished');
    expect(await b.done).toBe('finished');
    // B was admitted after A's last step, on the next one.
    expect(engine.stats()).toMatchObject({ running: 0, waiting: 0, requestsFinished: 2 });
  });

  it('batches decodes of concurrent requests into the same steps', async () => {
    const engine = new Engine(config({ maxBatchTokens: 8192 }));
    const runs = [run(engine, 32, 10), run(engine, 32, 10), run(engine, 32, 10)];
    await Promise.all(runs.map((r) => r.done));
    expect(engine.stats().steps).toBe(10);
  });

  it('rejects a request that could never fit and aborts the rest on close', async () => {
    const engine = new Engine(config({ kvCapacityTokens: 256 }));
    expect(() => run(engine, 200, 1, 100)).toThrow(RangeError);
    const r = run(engine, 32, 200);
    engine.close();
    // The engine ended it, not its client.
    expect(await r.done).toBe('preempted');
    expect(engine.stats()).toMatchObject({
      running: 0,
      waiting: 0,
      requestsAborted: 1,
      kvUsedTokens: 0,
    });
  });

  it('pause(abort) preempts what runs and holds new requests until resume', async () => {
    const engine = new Engine(config({ timeScale: 0.01 }));
    const running = run(engine, 32, 500);
    while (running.progress.length < 3) await new Promise((r) => setTimeout(r, 1));
    await engine.pause('abort');
    expect(await running.done).toBe('preempted');
    const held = run(engine, 32, 4);
    await new Promise((r) => setTimeout(r, 20));
    expect(held.progress).toEqual([]);
    expect(engine.stats()).toMatchObject({ paused: true, running: 0, waiting: 0 });
    engine.resume();
    expect(await held.done).toBe('finished');
    expect(engine.stats()).toMatchObject({ paused: false, requestsAborted: 1, requestsFinished: 1 });
  });

  it('pause(wait) answers once the requests in the engine finished; pause(keep) freezes them in place', async () => {
    const engine = new Engine(config({ timeScale: 0.01 }));
    const a = run(engine, 32, 30);
    let paused = false;
    const pausing = engine.pause('wait').then(() => (paused = true));
    const late = run(engine, 32, 2);
    expect(paused).toBe(false);
    await pausing;
    // Paused only after the request under way produced every token; the late one was held.
    expect(a.progress.at(-1)).toBe(30);
    expect(late.progress).toEqual([]);
    engine.resume();
    expect(await late.done).toBe('finished');

    const b = run(engine, 32, 500);
    while (b.progress.length < 2) await new Promise((r) => setTimeout(r, 1));
    await engine.pause('keep');
    const frozenAt = b.progress.length;
    await new Promise((r) => setTimeout(r, 30));
    // At most the step under way when the pause came lands.
    expect(b.progress.length).toBeLessThanOrEqual(frozenAt + 1);
    const frozen = b.progress.length;
    await new Promise((r) => setTimeout(r, 30));
    expect(b.progress.length).toBe(frozen);
    engine.resume();
    expect(await b.done).toBe('finished');
    expect(b.progress.at(-1)).toBe(500);
  });
});
