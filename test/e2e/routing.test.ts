import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import type { EngineInstance } from '../../gateway/server.js';
import { createRouter, type Router } from '../../scheduler/router.js';
import type { Store } from '../../trajectory/index.js';
import { openTestSession, sessionInfo, SHELL_TOOLS, startTestGateway, tempStore, widgetScript } from '../helpers/gateway.js';
import { testCodec, testEngineTokenizer } from '../helpers/stack.js';
import { SAMPLING_DEFAULTS } from '../../gateway/sampling-schema.js';

const FULL_KV = 16_384;
const tools = SHELL_TOOLS;
const script = {
  wanderProbability: 0,
  tasks: [
    widgetScript([
      { thought: 'Run the tests.', tool: { name: 'shell', arguments: { command: 'pytest' } } },
      { thought: 'Done now.', tool: null, content: 'The widget is fixed.' },
    ]),
    // A long answer that keeps its engine's KV reserved while it is (slowly) generated.
    { taskId: 'hog', match: 'HOG-HOG-HOG', solve: [{ thought: 'Hold.', tool: null, content: 'la '.repeat(3000) }] },
  ],
};

/** e0–e2 answer at once (e2 speaks SGLang); e3 is slow and small, and a long request fills it. */
const names = ['e0', 'e1', 'e2', 'e3'] as const;
const sims = new Map<string, EngineSim>();
const closed = new Set<string>();
let hog: AbortController;
let store: Store;
let router: Router;
let place: MockInstance<Router['policy']['route']>;
let gateway: FastifyInstance;
let url: string;

/** Instance of each placement the router made so far (first placements and failovers alike), by chain. */
function placements(from = 0): { chainId: string; instance: string }[] {
  return place.mock.calls.slice(from).flatMap(([request], i) => {
    const result = place.mock.results[from + i]!;
    return result.type === 'return' ? [{ chainId: request.chainId, instance: result.value.instance }] : [];
  });
}

const openSession = (sessionId: string) => openTestSession(url, sessionId);

/** One agent episode driven turn by turn: each call resends the whole conversation. */
class Episode {
  readonly messages: object[];
  key = '';
  constructor(readonly sessionId: string) {
    // Distinct first blocks: episodes share no prefix, so only load and memory place their first turn.
    this.messages = [
      { role: 'system', content: `Episode ${sessionId}. You are an agent.` },
      { role: 'user', content: 'Fix the widget please.' },
    ];
  }
  async open(): Promise<this> {
    this.key = await openSession(this.sessionId);
    return this;
  }
  /** Runs the next turn; returns the prompt tokens the engine served from its cache. */
  async turn(): Promise<number> {
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.key}` },
      body: JSON.stringify({ messages: this.messages, tools }),
    });
    const json: any = await r.json();
    expect(r.status, JSON.stringify(json)).toBe(200);
    const message = json.choices[0].message;
    this.messages.push(message);
    for (const call of message.tool_calls ?? []) this.messages.push({ role: 'tool', tool_call_id: call.id, content: 'ok' });
    return json.usage.prompt_tokens_details.cached_tokens;
  }
  get chainId(): string {
    return `${this.sessionId}/0`;
  }
}

const stats = (name: string) => sims.get(name)!.stats();

beforeAll(async () => {
  const codec = await testCodec();
  for (const name of names) {
    const full = name === 'e3';
    sims.set(
      name,
      await startEngineSim({ tokenizer: await testEngineTokenizer(), script, timeScale: full ? 5 : 0, kvCapacityTokens: full ? FULL_KV : 200_000 }),
    );
  }
  const engines: EngineInstance[] = names.map((name) => ({
    name,
    kind: name === 'e2' ? 'sglang' : 'vllm',
    url: sims.get(name)!.url,
    kvCapacityTokens: name === 'e3' ? FULL_KV : 200_000,
  }));
  // The production wiring (policy `ours`). Metrics stay usable for the whole test once scraped, and
  // no periodic health check runs after the first: only failed calls can take an engine out.
  router = createRouter(engines, { metricsMaxAgeMs: 10 * 60_000, healthIntervalMs: 10 * 60_000 });
  place = vi.spyOn(router.policy, 'route');
  store = tempStore('routing-');
  ({ gateway, url } = await startTestGateway(store, engines, router));

  // Fill e3: a request reserving nearly all its KV (prompt + max_tokens) for minutes.
  const prompt = await codec.encoder.encodeFirst([{ role: 'user', content: 'HOG-HOG-HOG' }], undefined);
  hog = new AbortController();
  void fetch(`${sims.get('e3')!.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: FULL_KV - prompt.length - 16, stream: true }),
    signal: hog.signal,
  })
    .then((r) => r.arrayBuffer())
    .catch(() => {});
  await vi.waitFor(() => expect(stats('e3').running).toBe(1));
  await router.registry.refresh();
});

afterAll(async () => {
  hog?.abort();
  await gateway?.close();
  for (const [name, sim] of sims) if (!closed.has(name)) await sim.close();
  store?.close();
});

describe('routing generations across four engines', () => {
  const episodes = ['p0', 'p1', 'p2', 'p3', 'p4', 'p5'].map((id) => new Episode(id));

  it("keeps each chain on the engine holding its prefix, whose cache serves the later turns", async () => {
    await Promise.all(episodes.map(async (e) => (await e.open()).turn()));
    const firstTurns = placements();
    const home = new Map(firstTurns.map((p) => [p.chainId, p.instance]));
    for (const episode of episodes) {
      for (let t = 0; t < 2; t++) {
        const from = place.mock.calls.length;
        const instance = home.get(episode.chainId)!;
        const before = stats(instance).cachedTokens;
        const cached = await episode.turn();
        expect(placements(from)).toEqual([{ chainId: episode.chainId, instance }]);
        expect(cached).toBeGreaterThan(0);
        expect(stats(instance).cachedTokens - before).toBe(cached);
      }
    }
  });

  it('moves new work away from an engine whose KV cache is full, and back once it has room', async () => {
    const e3 = router.registry.views().find((v) => v.name === 'e3')!;
    // Read from the engine's own metrics: the router sent it nothing.
    expect(e3.inFlightTokens).toBe(0);
    expect(e3.kvUsedTokens).toBeGreaterThan(0.9 * FULL_KV);
    // Load in flight on the others makes e3, with none, the cheapest place for a new chain.
    const load = ['e0', 'e1', 'e2'].map((name) => router.registry.begin(name, 1_000));
    try {
      const from = place.mock.calls.length;
      const burst = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7'].map((id) => new Episode(id));
      await Promise.all(burst.map(async (e) => (await e.open()).turn()));
      const placed = placements(from);
      expect(placed).toHaveLength(burst.length);
      expect(placed.some((p) => p.instance === 'e3')).toBe(false);
      expect(stats('e3').requestsReceived).toBe(1); // the request filling it
      episodes.push(...burst);

      hog.abort();
      await vi.waitFor(() => expect(stats('e3').running).toBe(0));
      await router.registry.refresh();
      const freed = place.mock.calls.length;
      await (await new Episode('f0').open()).turn();
      expect(placements(freed)).toEqual([{ chainId: 'f0/0', instance: 'e3' }]);
    } finally {
      for (const call of load) router.registry.end(call);
    }
  });

  it('fails over when an engine dies mid-way: every next turn succeeds and the dead engine gets no more calls', async () => {
    const last = new Map(placements().map((p) => [p.chainId, p.instance]));
    const counts = new Map<string, number>();
    for (const instance of last.values()) counts.set(instance, (counts.get(instance) ?? 0) + 1);
    const victim = [...counts].sort((a, b) => b[1] - a[1])[0]![0];
    const received = stats(victim).requestsReceived;
    await sims.get(victim)!.close();
    closed.add(victim);

    // Every episode's next turn at once: the victim's chains fail over, with the same prompt.
    const from = place.mock.calls.length;
    await Promise.all(episodes.map((e) => e.turn()));
    expect(router.registry.isHealthy(victim)).toBe(false);
    const moved = placements(from).filter((p) => last.get(p.chainId) === victim);
    // It was healthy until a call found it dead; each of its chains then went elsewhere once.
    expect(moved.filter((p) => p.instance === victim).length).toBeGreaterThan(0);
    expect(moved.filter((p) => p.instance !== victim).length).toBe(counts.get(victim));
    expect(stats(victim).requestsReceived).toBe(received);

    // From then on the router does not even try it, and chains stay where they moved.
    const after = place.mock.calls.length;
    const moves = new Map(placements(from).map((p) => [p.chainId, p.instance]));
    await Promise.all(episodes.map((e) => e.turn()));
    const next = placements(after);
    expect(next).toHaveLength(episodes.length);
    for (const p of next) expect(p.instance).toBe(moves.get(p.chainId));
    expect(next.some((p) => p.instance === victim)).toBe(false);
  });
});

describe("the router's token-level admission behind the gateway", () => {
  /** Room for one call with up to 1,500 output tokens, not for two. */
  const KV = 2_000;
  let sim: EngineSim;
  let gated: Router;
  let gatedStore: Store;
  let gatedGateway: FastifyInstance;
  let gatedUrl: string;

  beforeAll(async () => {
    // Slow enough that a long answer stays in flight until the test aborts it.
    sim = await startEngineSim({ tokenizer: await testEngineTokenizer(), script, timeScale: 10, kvCapacityTokens: 200_000 });
    const engines: EngineInstance[] = [{ name: 'g0', kind: 'vllm', url: sim.url, kvCapacityTokens: KV }];
    gated = createRouter(engines, { metricsMaxAgeMs: 10 * 60_000, healthIntervalMs: 10 * 60_000 });
    gatedStore = tempStore('routing-gate-');
    ({ gateway: gatedGateway, url: gatedUrl } = await startTestGateway(gatedStore, engines, gated));
  });

  afterAll(async () => {
    await gatedGateway?.close();
    await sim?.close();
    gatedStore?.close();
  });

  /** A long streamed answer on g0 that reserves most of its memory until aborted. */
  async function startHog(sessionId: string) {
    const hogKey = await openTestSession(gatedUrl, sessionId, sessionInfo({ homeInstance: 'g0', sampling: { ...SAMPLING_DEFAULTS, maxTokens: 1_500 } }));
    const hogAbort = new AbortController();
    const hogReply = fetch(`${gatedUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${hogKey}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'HOG-HOG-HOG' }], stream: true }),
      signal: hogAbort.signal,
    }).then((r) => r.arrayBuffer());
    await vi.waitFor(() => expect(sim.stats().running).toBe(1));
    return { hogAbort, hogReply };
  }

  it('holds a call while the engine is full and sends it once the call filling it ends', async () => {
    const { hogAbort, hogReply } = await startHog('hog');

    const key = await openTestSession(gatedUrl, 'w0', sessionInfo({ homeInstance: 'g0', sampling: { ...SAMPLING_DEFAULTS, maxTokens: 1_000 } }));
    let answered = false;
    const reply = fetch(`${gatedUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Fix the widget please.' }], tools }),
    }).then(async (r) => {
      answered = true;
      return { status: r.status, json: (await r.json()) as any };
    });
    // 1,500 + 1,000 output tokens reserved would overflow 2,000: the call waits in the router.
    await vi.waitFor(() => expect(gated.waiting).toBe(1));
    expect(answered).toBe(false);
    expect(sim.stats().requestsReceived).toBe(1);

    hogAbort.abort();
    await hogReply.catch(() => {});
    const { status, json } = await reply;
    expect(status, JSON.stringify(json)).toBe(200);
    expect(json.choices[0].message.tool_calls).toHaveLength(1);
    expect(gated.waiting).toBe(0);
    expect(sim.stats().requestsReceived).toBe(2);
  });

  it('gives up on a held call whose client went away', async () => {
    const { hogAbort, hogReply } = await startHog('hog2');
    const received = sim.stats().requestsReceived;

    const key = await openTestSession(gatedUrl, 'w1', sessionInfo({ homeInstance: 'g0', sampling: { ...SAMPLING_DEFAULTS, maxTokens: 1_000 } }));
    const gone = new AbortController();
    const reply = fetch(`${gatedUrl}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Fix the widget please.' }], tools, stream: true }),
      signal: gone.signal,
    }).then((r) => r.arrayBuffer());
    await vi.waitFor(() => expect(gated.waiting).toBe(1));
    gone.abort();
    await reply.catch(() => {});
    await vi.waitFor(() => expect(gated.waiting).toBe(0));
    hogAbort.abort();
    await hogReply.catch(() => {});
    await vi.waitFor(() => expect(sim.stats().running).toBe(0));
    // The abandoned call never reached the engine.
    expect(sim.stats().requestsReceived).toBe(received);
  });
});
