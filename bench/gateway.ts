/**
 * npm run bench:gateway
 *
 * What the gateway costs, measured on the gateway and not on the load generator: engine-sim (time
 * scale 0: no modelled GPU time) and the gateway (`rollout gateway` on its own SQLite store) each
 * run in their own process; this process generates the load. The
 * conversations are agent-like: a system prompt and a task, then per turn the model's tool call
 * and a ~2k-token tool result unique to the session and turn, so contexts grow to ~32k tokens over
 * 16 turns. Per row it prints:
 *   - gateway CPU ms per turn: utime+stime of the gateway process(es) from /proc over the window;
 *     and, apart, its CPU per session closed (the close's drift check re-renders the history);
 *   - event-loop delay p50/p99/max inside the gateway (`GET /admin/v1/stats`, worst replica);
 *   - latency p50/p99 through the gateway, the same token prompts sent straight to the engine's
 *     `/v1/completions` on the same schedule right after, and the difference turn by turn (added latency: p50/p99 of each turn's latency less the same turn's direct one);
 *   - turns per second; memory per live session: heap + array buffers after the turns less after
 *     closing the sessions, both after a collection ('-' when a session failed and so stopped
 *     short), and apart what stays after the close against before the row (caches, leaks);
 *   - errors per path (non-2xx, a body without choices, network failures: counted, never thrown;
 *     a failed session stops, the run goes on);
 *   - engine CPU ms per turn, to show when the engine and not the gateway is the bottleneck.
 * Modes (BENCH_MODE, comma-separated; default all):
 *   closed  — closed loop, every session at once with no think time, at BENCH_SESSIONS; a single
 *             session is run BENCH_SINGLE_SESSIONS (8) times in turn (printed `1x8`): /proc counts
 *             CPU in 10 ms ticks, which on one session's 16 turns is 0.6 ms per turn;
 *   open    — open loop: BENCH_OPEN_SESSIONS sessions arriving BENCH_OPEN_RATE per second, each
 *             thinking (its tool running) an exponential BENCH_THINK_MS on average between turns;
 *   scale   — `rollout gateway` with `gateway.processes` N for each N of BENCH_PROCESSES (N processes
 *             and the placement service they place through, as deployed), a closed loop of
 *             BENCH_SCALE_SESSIONS per process spread over their URLs by rendezvous hash, CPU of
 *             the whole process tree: throughput against N x one. Where the gateway's CPUs are
 *             fewer than N the tree runs under a CPU quota of BENCH_SCALE_CPU_SHARE cores per
 *             process (one process too), standing in for a core each;
 *   litellm — the same conversations through the LiteLLM proxy (.tools/litellm, installed by
 *             scripts/install-litellm.sh when missing) to the engine's own /v1/chat/completions,
 *             against sending them to that route directly (rows up to BENCH_LITELLM_DIRECT_SESSIONS),
 *             at BENCH_LITELLM_SESSIONS; its CPU is its whole process tree's. BENCH_LITELLM=0 skips it;
 *   node    — the same conversations through a bare Node proxy (bench/gateway/node-proxy.ts: fastify,
 *             JSON parsed and serialised again, the gateway's engine client) to that route, at
 *             BENCH_LITELLM_SESSIONS: the floor of any Node middlebox on this traffic here;
 *   stream  — closed-loop rows at BENCH_LITELLM_SESSIONS again, through the gateway and each peer,
 *             with every request asking for a stream as Claude Code, Codex and OpenCode do (the rows
 *             above do not stream, as mini-swe-agent does not): printed `stream`, compared with
 *             each other. The gateway streams from the engine either way; a peer then streams too.
 * CPUs: the middlebox under test (gateway replicas, LiteLLM, the Node proxy) runs on the upper half of the allowed
 * CPUs, the engine and this load generator on the rest (taskset; bench/gateway/cpus.ts), as in a
 * deployment where the gateway shares no cores with engines and agents. BENCH_PIN=0 unpins all.
 * Knobs (defaults): BENCH_TURNS (16), BENCH_SESSIONS (1,64,256), BENCH_SINGLE_SESSIONS (8), BENCH_OPEN_SESSIONS (256),
 * BENCH_OPEN_RATE (16), BENCH_THINK_MS (2000), BENCH_PROCESSES (1,2), BENCH_SCALE_SESSIONS (64 per process),
 * BENCH_SCALE_CPU_SHARE (auto: 0.25 when the largest N exceeds the gateway's CPUs, else none; 0: none),
 * BENCH_LITELLM_SESSIONS (1,64: the peers' rows), BENCH_LITELLM_DIRECT_SESSIONS (1), BENCH_GATEWAY_NODE_ARGS (none:
 * extra node flags for the gateway processes, e.g. `--cpu-prof`), BENCH_GATEWAY_GC (single: the
 * gateway processes run with `--single-threaded-gc`, as the README says to run one; parallel: with
 * V8's background GC threads), BENCH_WARMUP_SESSIONS (4: an
 * unreported set of conversations through the gateway, and through each peer, before their first
 * row). Everything it starts (engine, gateways, LiteLLM, the Node proxy, the temporary folder, the quota cgroups) is stopped in
 * `finally` and on SIGINT/SIGTERM, and the last line says whether any of its processes is left.
 * Prints figures and target checks; asserts nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fetchForSession } from '../gateway/client/rendezvous.js';
import { SqliteStore } from '../trajectory/index.js';
import {
  chatConversations,
  closedLoop,
  concurrencyOf,
  countStatus,
  describeErrors,
  errorCount,
  noErrors,
  openLoop,
  pairedDifferences,
  percentile,
  runPass,
  tokenReplay,
  type Errors,
  type PassResult,
  type Schedule,
} from './gateway/load.js';
import { cpuPlan, describePlan, pinSelf, type CpuPlan } from './gateway/cpus.js';
import { CpuQuotas } from './gateway/cpu-quota.js';
import { Children, ownCpuMs, treeCpuMs } from './gateway/processes.js';
import { ADMIN_TOKEN, ensureLitellm, GATEWAY_GC, gatewayStats, LITELLM_KEY, startEngine, startGateway, startLitellm, startNodeProxy, type Gateway, type Service } from './gateway/services.js';

const list = (name: string, fallback: string) => (process.env[name] ?? fallback).split(',').map((v) => v.trim()).filter(Boolean);
const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const TURNS = num('BENCH_TURNS', 16);
const MODES = new Set(list('BENCH_MODE', 'closed,open,scale,litellm,node,stream'));
const SESSIONS = list('BENCH_SESSIONS', '1,64,256').map(Number);
const OPEN_SESSIONS = num('BENCH_OPEN_SESSIONS', 256);
const OPEN_RATE = num('BENCH_OPEN_RATE', 16);
const THINK_MS = num('BENCH_THINK_MS', 2000);
const PROCESSES = list('BENCH_PROCESSES', '1,2').map(Number);
const SCALE_SESSIONS = num('BENCH_SCALE_SESSIONS', 64);
/**
 * Cores of CPU time per gateway process in the scale rows: the gateway's whole process tree runs
 * under a cgroup CPU quota of N x this (bench/gateway/cpu-quota.ts). `auto` is 0.25 when the
 * largest N exceeds the gateway's CPUs and no quota otherwise. A quarter of a core each keeps two
 * processes at half a core, so the engine and the load generator (about 1.5x the gateway's CPU per
 * turn here) still keep up with twice one.
 */
const SCALE_CPU_SHARE = process.env.BENCH_SCALE_CPU_SHARE ?? 'auto';
const LITELLM_SESSIONS = list('BENCH_LITELLM_SESSIONS', '1,64').map(Number);
const LITELLM_DIRECT_SESSIONS = num('BENCH_LITELLM_DIRECT_SESSIONS', 1);
const WARMUP_SESSIONS = num('BENCH_WARMUP_SESSIONS', 4);
const SINGLE_SESSIONS = num('BENCH_SINGLE_SESSIONS', 8);
/** A closed-loop row of `n` sessions at once: a single session is run `SINGLE_SESSIONS` times, one after another. */
const closedRow = (n: number) => closedLoop(n, TURNS, n === 1 ? SINGLE_SESSIONS : n);
const WITH_LITELLM = MODES.has('litellm') && process.env.BENCH_LITELLM !== '0';
const PIN = process.env.BENCH_PIN !== '0';
/** The session budget: room for every turn and the whole context. */
const SESSION_INFO = {
  batchId: 'bench', taskId: 'bench', groupId: 'bench.g0', agentName: 'bench', homeInstance: 'e0',
  budgets: { maxTurns: TURNS + 1, maxContextTokens: 65_536, maxWallTimeMs: 3_600_000 },
  sampling: { temperature: 1, topP: 1, maxTokens: 64 },
};

const say = (line: string) => process.stdout.write(`${line}\n`);
const fixed = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '-');

interface Row {
  /** The middlebox: the gateway, LiteLLM, or the bare Node proxy (`node`). */
  path: 'gateway' | Peer['path'];
  mode: string;
  /** Sessions at once. */
  sessions: number;
  /** Sessions in all (more than `sessions` when they ran in turn). */
  sessionsInAll: number;
  processes: number;
  /** Cores of CPU time per gateway process the gateway was held to (scale rows under a quota), else null. */
  cpuShare: number | null;
  cpuMsPerTurn: number;
  /** Gateway CPU of closing a session (its drift check re-renders and re-encodes the history); null for LiteLLM. */
  closeCpuMsPerSession: number | null;
  engineCpuMsPerTurn: number;
  lag: { p50: number; p99: number; max: number } | null;
  /**
   * The load side of the pass: this load generator's own event-loop delay p99 (a stalled generator
   * times its stall as the path's latency) and how busy the CPUs it shares with the engine were
   * (generator + engine CPU over the pass's wall time, as a share of those CPUs). Near 100% the
   * latencies measure queueing on the load side, not the middlebox.
   */
  load: { lagP99Ms: number; busyPercent: number };
  /** What the gateway measured it added per generating request (wall time less the engine's and the placement wait's), worst replica; null for LiteLLM. */
  ownAdded: { p50: number; p99: number; max: number } | null;
  /** The p99 of each part of `ownAdded` (gateway/turn-timing.ts `AddedPhases`), worst replica; null for LiteLLM. */
  ownPhasesP99: { body: number; beforeEngine: number; afterEngine: number } | null;
  /** The largest prompt of the row, tokens. */
  contextTokens: number;
  pass: PassResult;
  direct: PassResult | null;
  /**
   * Heap + array buffers the live sessions hold, per session: after the turns less after closing them,
   * both after a collection (so shared caches, e.g. the tokenizer's, are not counted); null when a
   * session failed (it stopped short) or the process could not collect.
   */
  memoryKiBPerSession: number | null;
  /** Heap + array buffers per session still held after the close, against before the row: caches, and anything leaked. */
  keptKiBPerSession: number | null;
  /** Wall time of the whole row (both paths, opening and closing sessions). */
  seconds: number;
}

const rate = (p: PassResult) => (p.seconds > 0 ? p.turns / p.seconds : 0);

function printHeader(): void {
  say('path    | mode   | sess | proc | context | CPU ms/turn | close ms/sess | engine ms/turn | loop lag p50/p99/max ms | load lag p99 / busy | p50 / p99 ms      | direct p50 / p99  | added p50 / p99   | own added p50/p99/max | turns/s | KiB/session | kept KiB/sess | row s | errors (path; direct)');
}

function printRow(r: Row): void {
  const [p50, p99] = [percentile(r.pass.latenciesMs, 50), percentile(r.pass.latenciesMs, 99)];
  const [d50, d99] = r.direct ? [percentile(r.direct.latenciesMs, 50), percentile(r.direct.latenciesMs, 99)] : [NaN, NaN];
  const added = r.direct ? pairedDifferences(r.pass, r.direct) : [];
  const cells = [
    r.path.padEnd(7),
    r.mode.padEnd(6),
    (r.sessionsInAll > r.sessions ? `${r.sessions}x${r.sessionsInAll}` : String(r.sessions)).padStart(4),
    String(r.processes).padStart(4),
    String(r.contextTokens).padStart(7),
    fixed(r.cpuMsPerTurn, 2).padStart(11),
    (r.closeCpuMsPerSession === null ? '-' : fixed(r.closeCpuMsPerSession, 1)).padStart(13),
    fixed(r.engineCpuMsPerTurn, 2).padStart(14),
    (r.lag ? `${fixed(r.lag.p50)} / ${fixed(r.lag.p99)} / ${fixed(r.lag.max)}` : '-').padStart(23),
    `${fixed(r.load.lagP99Ms)} ms / ${fixed(r.load.busyPercent, 0)}%`.padStart(19),
    `${fixed(p50)} / ${fixed(p99)}`.padStart(17),
    `${fixed(d50)} / ${fixed(d99)}`.padStart(17),
    (added.length > 0 ? `${fixed(percentile(added, 50))} / ${fixed(percentile(added, 99))}` : '- / -').padStart(17),
    (r.ownAdded ? `${fixed(r.ownAdded.p50)} / ${fixed(r.ownAdded.p99)} / ${fixed(r.ownAdded.max)}` : '-').padStart(21),
    fixed(rate(r.pass)).padStart(7),
    (r.memoryKiBPerSession === null ? '-' : fixed(r.memoryKiBPerSession, 0)).padStart(11),
    (r.keptKiBPerSession === null ? '-' : fixed(r.keptKiBPerSession, 0)).padStart(13),
    fixed(r.seconds, 0).padStart(5),
    `${describeErrors(r.pass.errors)}; ${r.direct ? describeErrors(r.direct.errors) : '-'}`,
  ];
  say(cells.join(' | '));
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** This process's event-loop delay, sampled every ms; reset at the start of each measured pass. */
const generatorLag = monitorEventLoopDelay({ resolution: 1 });
generatorLag.enable();

/** Starts measuring the load side of a pass (see `Row.load`); the returned function ends it. */
function measureLoad(bench: Bench): () => Row['load'] {
  const cpus = bench.cpus.rest === null ? os.availableParallelism() : bench.cpus.rest.split(',').length;
  const cpu = () => ownCpuMs(process.pid) + ownCpuMs(bench.engine.child.pid);
  const [cpu0, wall0] = [cpu(), performance.now()];
  generatorLag.reset();
  return () => ({
    // The histogram holds whole intervals between samples: less the 1 ms resolution is the delay.
    lagP99Ms: generatorLag.count > 0 ? Math.max(0, generatorLag.percentile(99) / 1e6 - 1) : 0,
    busyPercent: (100 * (cpu() - cpu0)) / Math.max(1, (performance.now() - wall0) * cpus),
  });
}

const memoryOf = (stats: { memory: { heapUsed: number; arrayBuffers: number } }[]) => stats.reduce((sum, s) => sum + s.memory.heapUsed + s.memory.arrayBuffers, 0);

interface Bench {
  children: Children;
  cpus: CpuPlan;
  dir: string;
  engine: Service;
  store: SqliteStore;
  /** The scale rows' CPU quota per gateway process, or null to run them without one. */
  scaleQuota: { share: number; quotas: CpuQuotas } | null;
}

/** CPUs the gateway processes may run on. */
const gatewayCpuCount = (cpus: CpuPlan | undefined) => (cpus?.middlebox ? cpus.middlebox.split(',').length : os.availableParallelism());

/** BENCH_SCALE_CPU_SHARE for this plan (see SCALE_CPU_SHARE); 0 is no quota. */
function scaleCpuShare(cpus: CpuPlan): number {
  const most = Math.max(...PROCESSES);
  const gatewayCpus = gatewayCpuCount(cpus);
  if (SCALE_CPU_SHARE === 'auto') return most > gatewayCpus ? 0.25 : 0;
  const share = Number(SCALE_CPU_SHARE);
  if (!Number.isFinite(share) || share < 0 || share * most > gatewayCpus) {
    throw new Error(`BENCH_SCALE_CPU_SHARE is auto, 0 (no quota) or cores per process with ${most} processes fitting on the gateway's ${gatewayCpus} CPU(s), not ${JSON.stringify(SCALE_CPU_SHARE)}`);
  }
  return share;
}

/** Opens a session per conversation on its rendezvous replica; a failed open is counted, and that session skipped. */
async function openSessions(urls: string[], ids: string[], errors: Errors): Promise<(string | undefined)[]> {
  return Promise.all(
    ids.map(async (sessionId, s) => {
      try {
        const r = await fetchForSession(urls, sessionId, '/admin/v1/sessions', {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
          body: JSON.stringify({ sessionId, episodeId: sessionId, attempt: 0, info: { ...SESSION_INFO, episodeIndex: s } }),
        });
        if (!r.ok) {
          await r.arrayBuffer();
          countStatus(errors, r.status);
          return undefined;
        }
        return ((await r.json()) as { key: string }).key;
      } catch {
        errors.network++;
        return undefined;
      }
    }),
  );
}

/** Closes the sessions; a close that fails is counted in `errors` (its session stays live, so the row's memory figures are not taken). */
async function closeSessions(urls: string[], ids: string[], errors: Errors): Promise<void> {
  await Promise.all(
    ids.map((id) =>
      fetchForSession(urls, id, `/admin/v1/sessions/${encodeURIComponent(id)}/close`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
        body: JSON.stringify({ reason: 'bench' }),
      }).then(
        async (r) => {
          await r.arrayBuffer();
          if (!r.ok) countStatus(errors, `close ${r.status}`);
        },
        () => void (errors.network += 1),
      ),
    ),
  );
}

/** One row through the gateway replicas `gateways` on `schedule`; `direct` also replays the prompts to the engine. */
async function gatewayRow(bench: Bench, gateway: Gateway, mode: string, label: string, schedule: Schedule, direct: boolean, cpuShare: number | null = null): Promise<Row> {
  const { urls } = gateway;
  // The gateway process with the processes it forked (and their worker threads).
  const gatewayCpuMs = () => treeCpuMs(gateway.child.pid);
  const started = performance.now();
  const sessions = schedule.startMs.length;
  const ids = Array.from({ length: sessions }, (_, s) => `${label}-${s}`);
  // Every session is opened before the pass and closed after it, so all of them are live at its end.
  const before = await Promise.all(urls.map((u) => gatewayStats(u, '?gc=1')));
  const errors = noErrors();
  const keys = await openSessions(urls, ids, errors);
  await Promise.all(urls.map((u) => gatewayStats(u, '?reset=1')));
  const cpu0 = gatewayCpuMs();
  const engine0 = ownCpuMs(bench.engine.child.pid);
  const conversations = chatConversations({ urls, token: (s) => keys[s], sessionId: (s) => ids[s]! }, sessions, label, errors, mode === 'stream');
  const loadEnd = measureLoad(bench);
  const pass = await runPass(schedule, (s, t) => (keys[s] === undefined ? Promise.resolve(false) : conversations.turn(s, t)), errors);
  const load = loadEnd();
  const cpu1 = gatewayCpuMs();
  const engine1 = ownCpuMs(bench.engine.child.pid);
  const window = await Promise.all(urls.map((u) => gatewayStats(u, '')));
  const after = await Promise.all(urls.map((u) => gatewayStats(u, '?gc=1')));
  let replay: PassResult | null = null;
  if (direct) {
    const directErrors = noErrors();
    replay = await runPass(schedule, tokenReplay(bench.engine.url, (s) => bench.store.loadTurns(ids[s]!), directErrors), directErrors);
  }
  const cpu2 = gatewayCpuMs();
  await closeSessions(urls, ids, errors);
  const cpu3 = gatewayCpuMs();
  const closed = await Promise.all(urls.map((u) => gatewayStats(u, '?gc=1')));
  const worst = (pick: (s: (typeof window)[number]) => number) => Math.max(...window.map(pick));
  // Sessions that failed stopped short of the full context: their memory would understate it.
  const measured = after.every((s) => s.collected) && errorCount(errors) === 0;
  const perSession = (bytes: number) => (measured ? bytes / sessions / 1024 : null);
  return {
    path: 'gateway',
    mode,
    sessions: concurrencyOf(schedule),
    sessionsInAll: sessions,
    processes: urls.length,
    cpuShare,
    cpuMsPerTurn: (cpu1 - cpu0) / Math.max(1, pass.turns),
    closeCpuMsPerSession: (cpu3 - cpu2) / Math.max(1, sessions),
    engineCpuMsPerTurn: (engine1 - engine0) / Math.max(1, pass.turns),
    lag: { p50: worst((s) => s.eventLoopDelayMs.p50), p99: worst((s) => s.eventLoopDelayMs.p99), max: worst((s) => s.eventLoopDelayMs.max) },
    load,
    ownAdded: { p50: worst((s) => s.turnMs.added.p50), p99: worst((s) => s.turnMs.added.p99), max: worst((s) => s.turnMs.added.max) },
    ownPhasesP99: {
      body: worst((s) => s.turnMs.phases.body.p99),
      beforeEngine: worst((s) => s.turnMs.phases.beforeEngine.p99),
      afterEngine: worst((s) => s.turnMs.phases.afterEngine.p99),
    },
    contextTokens: conversations.maxPromptTokens(),
    pass,
    direct: replay,
    memoryKiBPerSession: perSession(memoryOf(after) - memoryOf(closed)),
    keptKiBPerSession: perSession(memoryOf(closed) - memoryOf(before)),
    seconds: (performance.now() - started) / 1000,
  };
}

/** A chat pass-through measured beside the gateway, in front of the engine's own chat route. */
interface Peer {
  path: 'litellm' | 'node';
  service: Service;
}

/**
 * One row through a peer, then (up to BENCH_LITELLM_DIRECT_SESSIONS sessions: the engine's chat
 * route tokenizes every whole prompt, so larger rows would mostly time the engine) the same
 * conversations straight to the engine's chat route; `stream`: every request asks for a stream.
 */
async function peerRow(bench: Bench, peer: Peer, sessions: number, stream: boolean): Promise<Row> {
  const started = performance.now();
  const schedule = closedRow(sessions);
  const mode = stream ? 'stream' : 'closed';
  const label = `${peer.path}-${mode}-${sessions}`;
  const errors = noErrors();
  const inAll = schedule.startMs.length;
  const conversations = chatConversations({ urls: [peer.service.url], token: () => LITELLM_KEY, sessionId: (s) => `${label}-${s}` }, inAll, label, errors, stream);
  bench.children.noteDescendants(peer.service.child);
  const cpu0 = treeCpuMs(peer.service.child.pid);
  const engine0 = ownCpuMs(bench.engine.child.pid);
  const loadEnd = measureLoad(bench);
  const pass = await runPass(schedule, conversations.turn, errors);
  const load = loadEnd();
  const cpu1 = treeCpuMs(peer.service.child.pid);
  const engine1 = ownCpuMs(bench.engine.child.pid);
  let direct: PassResult | null = null;
  if (sessions <= LITELLM_DIRECT_SESSIONS) {
    const directErrors = noErrors();
    const directTurn = chatConversations({ urls: [bench.engine.url], token: () => undefined, sessionId: (s) => `${label}-${s}` }, inAll, label, directErrors, stream);
    direct = await runPass(schedule, directTurn.turn, directErrors);
  }
  return {
    path: peer.path,
    mode,
    sessions,
    sessionsInAll: inAll,
    processes: 1,
    cpuShare: null,
    cpuMsPerTurn: (cpu1 - cpu0) / Math.max(1, pass.turns),
    closeCpuMsPerSession: null,
    engineCpuMsPerTurn: (engine1 - engine0) / Math.max(1, pass.turns),
    lag: null,
    load,
    ownAdded: null,
    ownPhasesP99: null,
    contextTokens: conversations.maxPromptTokens(),
    pass,
    direct,
    memoryKiBPerSession: null,
    keptKiBPerSession: null,
    seconds: (performance.now() - started) / 1000,
  };
}

function printTargets(rows: Row[], cpus: CpuPlan | undefined): void {
  const check = (ok: boolean) => (ok ? 'met' : 'NOT met');
  say('targets:');
  const big = rows.filter((r) => r.path === 'gateway' && r.mode === 'closed').at(-1);
  if (big) say(`  CPU per turn <= 3 ms (closed, ${big.sessions} sessions): ${fixed(big.cpuMsPerTurn, 2)} ms — ${check(big.cpuMsPerTurn <= 3)}`);
  // A peer's row against the gateway's row of the same sessions and mode (streamed or not).
  const gatewayLike = (peer: Row) => rows.find((r) => r.path === 'gateway' && r.mode === peer.mode && r.processes === 1 && r.sessions === peer.sessions);
  for (const l of rows.filter((r) => r.path === 'litellm')) {
    const g = gatewayLike(l);
    if (g) {
      const ratio = l.cpuMsPerTurn / g.cpuMsPerTurn;
      say(`  CPU per turn at least 5x less than LiteLLM (${l.sessions} sessions${l.mode === 'stream' ? ', streamed' : ''}): gateway ${fixed(g.cpuMsPerTurn, 2)} ms, LiteLLM ${fixed(l.cpuMsPerTurn, 2)} ms, LiteLLM/gateway ${fixed(ratio, 2)} — ${check(ratio >= 5)}`);
    }
  }
  for (const n of rows.filter((r) => r.path === 'node')) {
    const g = gatewayLike(n);
    const l = rows.find((r) => r.path === 'litellm' && r.mode === n.mode && r.sessions === n.sessions);
    // The floor is not a target: it says how much of the gateway's CPU any Node middlebox would pay here.
    say(`  (floor, ${n.sessions} sessions${n.mode === 'stream' ? ', streamed' : ''}: a bare Node proxy costs ${fixed(n.cpuMsPerTurn, 2)} ms per turn${g ? `, the gateway ${fixed(g.cpuMsPerTurn / n.cpuMsPerTurn, 2)}x it` : ''}${l ? `, LiteLLM ${fixed(l.cpuMsPerTurn / n.cpuMsPerTurn, 2)}x it` : ''})`);
  }
  const open = rows.find((r) => r.mode === 'open');
  if (open?.ownAdded) say(`  added latency p99 <= 10 ms (open loop, ${open.sessions} sessions, as the gateway measures it: each request's time less the engine's and the placement wait): ${fixed(open.ownAdded.p99)} ms — ${check(open.ownAdded.p99 <= 10)}`);
  if (open?.ownPhasesP99) {
    const p = open.ownPhasesP99;
    say(`  (its parts' own p99: reading the body ${fixed(p.body)} ms, before the engine ${fixed(p.beforeEngine)} ms, after it ${fixed(p.afterEngine)} ms)`);
  }
  if (open?.direct) {
    const added = percentile(pairedDifferences(open.pass, open.direct), 99);
    // Two passes at different moments: each one's engine stalls land in the difference too.
    say(`  (the same, end to end: turn by turn against the direct replay, p99 ${fixed(added)} ms; the direct replay alone had p99 ${fixed(percentile(open.direct.latenciesMs, 99))} ms)`);
  }
  if (open?.lag) say(`  event-loop lag p99 <= 10 ms (open loop, ${open.sessions} sessions): ${fixed(open.lag.p99)} ms — ${check(open.lag.p99 <= 10)}`);
  const closedLag = rows.filter((r) => r.lag && (r.mode === 'closed' || r.mode === 'stream'));
  if (closedLag.length > 0) {
    // With every session in flight at once and no think time the loop never idles: its delay is one loop pass over all of them.
    say(`  (closed loop, saturated by design: event-loop lag p99 up to ${fixed(Math.max(...closedLag.map((r) => r.lag!.p99)))} ms)`);
  }
  const sized = rows.filter((r) => r.memoryKiBPerSession !== null && r.contextTokens >= 30_000);
  if (sized.length > 0) {
    const most = Math.max(...sized.map((r) => r.memoryKiBPerSession!));
    say(`  memory per live ~30k-token session <= 200 KiB (largest of ${sized.length} rows): ${fixed(most, 0)} KiB — ${check(most <= 200)}`);
  }
  const scale = rows.filter((r) => r.mode === 'scale');
  const one = scale.find((r) => r.processes === 1);
  for (const r of scale.filter((x) => x.processes > 1)) {
    if (!one) break;
    const ratio = rate(r.pass) / (r.processes * rate(one.pass));
    const gatewayCpus = gatewayCpuCount(cpus);
    // Near saturation the engine and the load generator, not the gateway processes, set the rate.
    const loadBound = Math.max(r.load.busyPercent, one.load.busyPercent) >= 90;
    const verdict =
      // A row whose sessions failed stopped early, so its rate is not the gateway's.
      errorCount(r.pass.errors) + errorCount(one.pass.errors) > 0
        ? 'not comparable: a row had errors'
        : r.cpuShare === null && r.processes > gatewayCpus
          ? `not measurable here: ${r.processes} processes on ${gatewayCpus} CPU${gatewayCpus === 1 ? '' : 's'} for the gateway (BENCH_SCALE_CPU_SHARE gives each a quota)`
          : loadBound
            ? `not measurable: the engine and load generator's CPUs were ${fixed(Math.max(r.load.busyPercent, one.load.busyPercent), 0)}% busy (lower BENCH_SCALE_CPU_SHARE)`
            : check(ratio >= 0.8);
    const used = (row: Row) => `${fixed((rate(row.pass) * row.cpuMsPerTurn) / 1000, 2)} cores`;
    const where =
      r.cpuShare !== null
        ? `the gateway, its processes and the placement service, held to ${r.cpuShare} of a core per process by a cgroup CPU quota, standing in for a core each; used ${used(one)} and ${used(r)}`
        : cpus?.middlebox
          ? `the gateway processes share CPUs ${cpus.middlebox}`
          : `${os.availableParallelism()} cores, shared with the engine and the load generator`;
    say(`  ${r.processes} processes: throughput >= 0.8 x ${r.processes} x one: ${fixed(rate(r.pass))} vs ${fixed(rate(one.pass))} turns/s, ${fixed(ratio, 2)} x N x one — ${verdict} (${where})`);
  }
}

async function run(bench: Bench, rows: Row[]): Promise<void> {
  const record = (r: Row) => {
    rows.push(r);
    printRow(r);
  };
  const main = await startGateway(bench.children, bench.dir, bench.engine.url, 1, 'main', bench.cpus);
  // Unreported: JIT compilation and first-use caches would otherwise land on the first row.
  await gatewayRow(bench, main, 'warmup', 'warmup', closedLoop(WARMUP_SESSIONS, TURNS), false);
  printHeader();
  if (MODES.has('closed')) for (const n of SESSIONS) record(await gatewayRow(bench, main, 'closed', `closed-${n}`, closedRow(n), true));
  if (MODES.has('stream')) {
    await gatewayRow(bench, main, 'stream', 'warmup-stream', closedLoop(WARMUP_SESSIONS, TURNS), false);
    for (const n of LITELLM_SESSIONS) record(await gatewayRow(bench, main, 'stream', `stream-${n}`, closedRow(n), false));
  }
  if (MODES.has('open')) record(await gatewayRow(bench, main, 'open', 'open', openLoop(OPEN_SESSIONS, TURNS, OPEN_RATE, THINK_MS), true));
  if (MODES.has('scale')) {
    const quota = bench.scaleQuota;
    for (const n of PROCESSES) {
      // Under a quota, one process is held to it too: the baseline N is compared with.
      const gateway =
        n === 1 && !quota
          ? main
          : await startGateway(bench.children, bench.dir, bench.engine.url, n, `scale${n}`, bench.cpus, quota ? (name, command) => quota.quotas.wrap(name, n * quota.share, command) : undefined);
      if (gateway !== main) await gatewayRow(bench, gateway, 'warmup', `warmup-scale-${n}`, closedLoop(WARMUP_SESSIONS * n, TURNS), false);
      record(await gatewayRow(bench, gateway, 'scale', `scale-${n}`, closedLoop(SCALE_SESSIONS * n, TURNS), false, quota?.share ?? null));
      if (gateway !== main) await bench.children.stop(gateway.child);
    }
  }
  const peers: Peer[] = [];
  if (WITH_LITELLM) {
    if (!ensureLitellm(say)) say('LiteLLM could not be installed: its rows are skipped');
    else peers.push({ path: 'litellm', service: await startLitellm(bench.children, bench.dir, bench.engine.url, await freePort(), bench.cpus) });
  }
  if (MODES.has('node')) peers.push({ path: 'node', service: await startNodeProxy(bench.children, bench.dir, bench.engine.url, bench.cpus) });
  for (const peer of peers) {
    await peerRow(bench, peer, WARMUP_SESSIONS, false);
    for (const n of LITELLM_SESSIONS) record(await peerRow(bench, peer, n, false));
    if (!MODES.has('stream')) continue;
    await peerRow(bench, peer, WARMUP_SESSIONS, true);
    for (const n of LITELLM_SESSIONS) record(await peerRow(bench, peer, n, true));
  }
}

async function main(): Promise<void> {
  const children = new Children();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-gw-'));
  const rows: Row[] = [];
  const started = performance.now();
  let store: SqliteStore | undefined;
  let plan: CpuPlan | undefined;
  let quotas: CpuQuotas | null = null;
  let finished: Promise<void> | undefined;
  // Once, from `finally` or a signal, whichever comes first: targets, then everything stopped.
  const finish = () =>
    (finished ??= (async () => {
      if (rows.length > 0) printTargets(rows, plan);
      await children.stopAll();
      await quotas?.removeAll();
      store?.close();
      rmSync(dir, { recursive: true, force: true });
      const left = children.leftBehind();
      const failed = rows.reduce((sum, r) => sum + errorCount(r.pass.errors) + (r.direct ? errorCount(r.direct.errors) : 0), 0);
      say(`errors: ${failed} failed requests over all rows; the run took ${fixed((performance.now() - started) / 1000, 0)} s`);
      say(left.length === 0 ? `cleaned up: none of the ${children.count} processes it started is running; ${dir} removed` : `LEFT BEHIND: pids ${left.join(', ')} still running`);
    })());
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      say(`\n${signal}: stopping everything the benchmark started`);
      void finish().then(() => process.exit(130));
    });
  }
  try {
    const cores = os.availableParallelism();
    const cpus = (plan = cpuPlan(PIN));
    const share = MODES.has('scale') ? scaleCpuShare(cpus) : 0;
    pinSelf(cpus.rest);
    const engine = await startEngine(children, dir, TURNS, cpus);
    store = SqliteStore.open(path.join(dir, 'store.sqlite'));
    if (share > 0) {
      quotas = await CpuQuotas.open(dir);
      if (!quotas) say('no cgroup hierarchy is writable here: the scale rows run without a CPU quota');
    }
    say(`gateway benchmark: ${TURNS} turns per session (context: the largest prompt of the row, tokens), engine-sim at time scale 0, ${cores} cores; load generator pid ${process.pid}, engine pid ${engine.child.pid}; ${describePlan(cpus)}; gateway GC: ${GATEWAY_GC === 'single' ? '--single-threaded-gc' : "V8's background threads"} (BENCH_GATEWAY_GC)`);
    await run({ children, cpus, dir, engine, store, scaleQuota: quotas ? { share, quotas } : null }, rows);
  } catch (error) {
    say(`benchmark stopped early: ${(error as Error).message}`);
    process.exitCode = 1;
  } finally {
    await finish();
  }
}

await main();
