import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import os from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { startMetricsListener } from '../../telemetry/exposition.js';
import { createMetrics, type RolloutMetrics } from '../../telemetry/metrics.js';
import type { Codec } from '../../gateway/codec/index.js';
import { isPlacementMessage } from '../../scheduler/placement/ipc-messages.js';
import { servePlacement } from '../../scheduler/placement/ipc-server.js';
import { SharedPlacement } from '../../scheduler/placement/shared-placement.js';
import type { Store } from '../../trajectory/index.js';
import { stopChild } from '../child-process.js';
import { ConfigError, type Config } from '../config.js';
import { gatewayAdminToken } from '../secrets.js';
import { withStops } from '../stops.js';
import { ChildMessage, type ChildStartMessage } from './gateway-child-protocol.js';
import { configuredInstances } from './engines.js';
import { checkEngines, type CheckedEngine } from '../engine-check.js';
import { startGateway } from './gateway.js';

const CHILD = fileURLToPath(new URL('./gateway-child.ts', import.meta.url));
/** The child runs the TypeScript sources through tsx, as the CLI does (cli/bin.mjs). */
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/** The node flags a gateway process runs with: how V8 collects its garbage, then `nodeArgs` (config `gateway`). */
export function gatewayNodeFlags(gateway: Pick<Config['gateway'], 'singleThreadedGc' | 'maxSemiSpaceMiB' | 'nodeArgs'>): string[] {
  return [...(gateway.singleThreadedGc ? ['--single-threaded-gc'] : []), `--max-semi-space-size=${gateway.maxSemiSpaceMiB}`, ...gateway.nodeArgs];
}

/**
 * How gateway processes are started and kept: a process not listening within `startTimeoutMs`
 * fails the start; one that exits unexpectedly is restarted after `firstRestartDelayMs`, doubled
 * per failure in a row up to `maxRestartDelayMs`, back to the first once a process ran
 * `stableMs`; `stop()` sends SIGTERM, then SIGKILL after `stopGraceMs`.
 */
export const GATEWAY_PROCESS_DEFAULTS = {
  startTimeoutMs: 120_000,
  firstRestartDelayMs: 500,
  maxRestartDelayMs: 30_000,
  stableMs: 60_000,
  stopGraceMs: 10_000,
} as const;

export class GatewayProcessError extends Error {
  override name = 'GatewayProcessError';
}

/** The gateways of this host as the clients of this configuration reach them. */
export interface GatewaysRole {
  /** Every gateway's URL, in process order; a restarted process keeps its URL. */
  urls: string[];
  /** The health view of the router the gateways place through when it runs in this process; else undefined. */
  isAvailable: ((instance: string) => boolean) | undefined;
  /** The gateway processes' pids now (a restarted one's new pid); none when the gateway runs in this process. */
  pids(): number[];
  /** The placement's metrics listener (`gateway.metricsPort`), when this process runs one. */
  metricsUrl: string | undefined;
  stop(): Promise<void>;
}

/** What the gateways may share with the rest of the process (the in-process gateway uses all, processes only `engines`). */
export interface GatewaysShared {
  store?: Store;
  codec?: Codec;
  /** Default: the configured engines (`configuredInstances`), checked (`checkEngines`). */
  engines?: CheckedEngine[];
  /** Where a gateway process's unexpected exit and restart are reported. Default: stderr. */
  log?: (line: string) => void;
  /**
   * The process's metrics: the in-process gateway's, or the placement service's that several
   * gateway processes route through (each gateway process counts its turns on its own). Default: their own.
   */
  metrics?: RolloutMetrics;
}

/** `url` with its port replaced. */
function withPort(url: string, port: number): string {
  const u = new URL(url);
  u.port = String(port);
  return u.href.replace(/\/$/, '');
}

/** One gateway process: forked, watched, restarted with backoff when it exits unexpectedly, stopped. */
class GatewayProcess {
  private child: ChildProcess | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopping = false;
  private delayMs: number = GATEWAY_PROCESS_DEFAULTS.firstRestartDelayMs;
  private listeningSince = 0;
  url = '';

  /** @param placement the placement this process asks over its IPC channel; none: it asks `gateway.placementUrl`. */
  constructor(
    readonly name: string,
    private config: Config,
    private readonly log: (line: string) => void,
    private readonly placement: SharedPlacement | undefined,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Forks the process, sends it its configuration and resolves with its URL once it listens. */
  async start(): Promise<string> {
    const child = fork(CHILD, [], {
      execArgv: ['--import', TSX, ...gatewayNodeFlags(this.config.gateway)],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'json',
    });
    this.child = child;
    if (this.placement) servePlacement(child, this.placement, this.log);
    child.send({ type: 'start', config: this.config, placementOverIpc: this.placement !== undefined } satisfies ChildStartMessage);
    const url = await this.listening(child);
    // A restart comes back on the same port, so the clients' URLs stay right.
    if (this.config.gateway.port === 0)
      this.config = {
        ...this.config,
        gateway: { ...this.config.gateway, port: Number(new URL(url).port) },
      };
    this.url = url;
    this.listeningSince = Date.now();
    child.once('exit', (code, signal) => this.exited(child, signal ?? `code ${code}`));
    return url;
  }

  private listening(child: ChildProcess): Promise<string> {
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (why: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        child.kill('SIGKILL');
        reject(new GatewayProcessError(`gateway process ${this.name} ${why}`));
      };
      const timer = setTimeout(
        () => fail(`did not listen within ${GATEWAY_PROCESS_DEFAULTS.startTimeoutMs} ms`),
        GATEWAY_PROCESS_DEFAULTS.startTimeoutMs,
      );
      const onMessage = (raw: unknown) => {
        if (isPlacementMessage(raw)) return;
        child.off('message', onMessage);
        const message = ChildMessage.safeParse(raw);
        if (!message.success) return fail('sent a message that is not part of the protocol');
        if (message.data.type === 'failed') return fail(`failed to start: ${message.data.message}`);
        settled = true;
        clearTimeout(timer);
        resolve(message.data.url);
      };
      child.on('message', onMessage);
      child.once('exit', (code, signal) =>
        fail(`exited (${signal ?? `code ${code}`}) before it listened`),
      );
      child.once('error', (error) => fail(`could not be started: ${error.message}`));
    });
  }

  private exited(child: ChildProcess, how: string): void {
    if (this.stopping || child !== this.child) return;
    if (Date.now() - this.listeningSince >= GATEWAY_PROCESS_DEFAULTS.stableMs)
      this.delayMs = GATEWAY_PROCESS_DEFAULTS.firstRestartDelayMs;
    this.log(
      `gateway process ${this.name} (pid ${child.pid}, ${this.url}) exited unexpectedly (${how}); restarting it in ${this.delayMs} ms`,
    );
    this.restartLater();
  }

  private restartLater(): void {
    const delay = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, GATEWAY_PROCESS_DEFAULTS.maxRestartDelayMs);
    this.timer = setTimeout(() => {
      this.start().then(
        () => this.log(`gateway process ${this.name} restarted (pid ${this.pid}) at ${this.url}`),
        (error: unknown) => {
          if (this.stopping) return;
          this.log(`${(error as Error).message}; trying again in ${this.delayMs} ms`);
          this.restartLater();
        },
      );
    }, delay);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    if (this.child) await stopChild(this.child, 'SIGTERM', GATEWAY_PROCESS_DEFAULTS.stopGraceMs);
  }
}

/**
 * `gateway.processes` gateway processes on this host, each a replica of its own (port, replica id
 * `<replicaId or hostname:port>/p<i>`) on the configured store. Without `gateway.placementUrl` the
 * placement runs here and every process places through it over its IPC channel (cheaper than
 * HTTP on both ends), so admission and the prefix index are shared as between replicas on many
 * machines.
 */
export async function startGatewayProcesses(
  config: Config,
  shared: GatewaysShared = {},
): Promise<GatewaysRole> {
  const g = config.gateway;
  if (g.advertiseUrl && g.port === 0)
    throw new ConfigError(
      'gateway.advertiseUrl with gateway.processes > 1 needs a fixed gateway.port: process i advertises that URL with port + i',
    );
  if (g.metricsPort !== null && g.placementUrl)
    throw new ConfigError("gateway.metricsPort with gateway.placementUrl: the router's metrics are on the placement service's /metrics");
  const log = shared.log ?? ((line: string) => console.error(line));
  const adminToken = gatewayAdminToken(config);
  return withStops(async (stops) => {
    const engines = shared.engines ?? (await checkEngines(configuredInstances(config), config.model.name, log));
    const metrics = shared.metrics ?? createMetrics();
    const placement = g.placementUrl ? undefined : new SharedPlacement({ engines, routing: config.routing, metrics });
    if (placement) stops.push(() => placement.close());
    const listener = g.metricsPort === null ? undefined : await startMetricsListener({ host: g.metricsHost, port: g.metricsPort, registry: metrics.registry, token: adminToken });
    if (listener) stops.push(() => listener.close());
    const base = g.replicaId ?? `${os.hostname()}:${g.port}`;
    const processes = Array.from({ length: g.processes }, (_, i) => {
      const port = g.port === 0 ? 0 : g.port + i;
      const gateway = {
        ...g,
        processes: 1,
        metricsPort: null,
        port,
        replicaId: `${base}/p${i}`,
        advertiseUrl: g.advertiseUrl && withPort(g.advertiseUrl, port),
        adminToken,
      };
      return new GatewayProcess(`p${i}`, { ...config, engines, gateway }, log, placement);
    });
    stops.push(async () => void (await Promise.all(processes.map((p) => p.stop()))));
    const urls = await Promise.all(processes.map((p) => p.start()));
    const isAvailable = placement && ((instance: string) => placement.router.registry.isHealthy(instance));
    return { urls, isAvailable, pids: () => processes.flatMap((p) => p.pid ?? []), metricsUrl: listener?.url };
  });
}

/** What `rollout gateway` and the stack say once the gateways listen. */
export function gatewaysListening(role: GatewaysRole): string {
  const metrics = role.metricsUrl ? `; router metrics at ${role.metricsUrl}/metrics` : '';
  return `gateway listening on ${role.urls.join(' ')}${metrics}`;
}

/** The gateway of this host: in this process with `gateway.processes` 1, else `startGatewayProcesses`. */
export async function startGateways(
  config: Config,
  shared: GatewaysShared = {},
): Promise<GatewaysRole> {
  if (config.gateway.processes > 1) return startGatewayProcesses(config, shared);
  if (config.gateway.metricsPort !== null)
    throw new ConfigError("gateway.metricsPort is for gateway.processes > 1: an in-process gateway's own /metrics has the router's metrics");
  const gateway = await startGateway(config, shared);
  return {
    urls: [gateway.url],
    isAvailable: gateway.isAvailable,
    pids: () => [],
    metricsUrl: undefined,
    stop: gateway.stop,
  };
}
