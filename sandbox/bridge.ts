/**
 * The gateway bridge: how an agent in a network-less sandbox reaches the gateway and nothing else.
 *
 * Host side, a Unix socket per sandbox, placed in the directory the sandbox sees as `/tmp`, proxies
 * every connection to the TCP address of the session's gateway replica (rendezvous hash of the
 * session id, the next replica when one refuses the connection). Inside the sandbox,
 * `bridge/forwarder.mjs` (mounted read-only, run with the agent sidecar's own Node runtime, so the
 * image needs no node) listens on `127.0.0.1:<port>` and forwards to that socket. Every bubblewrap exec has its own network namespace, so the forwarder wraps the agent
 * command and runs in the same exec (see `bridgedCommand`).
 */
import { chmod, mkdir, rm } from 'node:fs/promises';
import net from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultMountRoot } from './bubblewrap.js';
import { isConnectionFailure, rendezvousOrder } from '../gateway/client/rendezvous.js';
import { GATEWAY_OUTAGE_DEFAULT_MS } from '../gateway/client/outage.js';

/** Where the forwarder script is mounted read-only in every black-box agent's sandbox. */
export const BRIDGE_SANDBOX_DIR = '/opt/agent-bridge';
/**
 * The sandbox path of the agent sidecar's self-contained Node runtime (`scripts/install-agents.sh`
 * puts it in `.tools/agents/runtime`, mounted with the sidecar at `/opt/agents`): the host's node
 * with the libraries and loader it was linked with, run through that loader, so it works in an
 * image without node or with another C library.
 */
export const BRIDGE_NODE_DIR = '/opt/agents/runtime';
/** The argv that runs that Node runtime: the forwarder's, and any JavaScript agent's. */
export const BRIDGE_NODE = [
  `${BRIDGE_NODE_DIR}/lib/ld.so`,
  '--library-path',
  `${BRIDGE_NODE_DIR}/lib`,
  `${BRIDGE_NODE_DIR}/bin/node`,
];

/** The port the agent sees the gateway on, `http://127.0.0.1:<port>`. */
export const BRIDGE_PORT = 18080;
/** The socket's directory relative to the sandbox's `/tmp`. */
const SOCKET_SUBDIR = '.gateway-bridge';
const SOCKET_NAME = 'gateway.sock';
/** Longest Unix socket path Linux accepts (`sun_path` less the terminating NUL). */
const MAX_SOCKET_PATH = 107;

/** The host directory holding `forwarder.mjs`; mount it at `BRIDGE_SANDBOX_DIR`. */
export const FORWARDER_HOST_DIR = fileURLToPath(new URL('./bridge/', import.meta.url));

export class GatewayBridgeError extends Error {
  override name = 'GatewayBridgeError';
}

export interface GatewayBridge {
  /** The socket on the host. */
  readonly hostSocketPath: string;
  /** The same socket as the sandbox sees it. */
  readonly sandboxSocketPath: string;
  /** Stops listening, drops open connections and removes the socket. Idempotent. */
  close(): Promise<void>;
}

export interface GatewayBridgeOptions {
  /** Host directory the sandbox sees as `/tmp` (bubblewrap: `<rootDir>/<id>/tmp`). */
  sandboxTmpHostDir: string;
  /** The gateway replicas' base URLs on the host, e.g. `http://127.0.0.1:8300`. */
  gatewayUrls: readonly string[];
  /** The agent's gateway session: its replica is chosen by rendezvous hash of this id. */
  sessionId: string;
  /**
   * How long a connection waits for some replica to accept (a gateway restarting) before the
   * agent's connection is dropped, ms. Default 90000.
   */
  outageMs?: number;
}

/** Delays between rounds over the replicas while none accepts, ms: doubling from the first to the last. */
const RECONNECT_DELAY_MS = { first: 250, max: 5_000 };

/** A gateway replica's TCP address. */
function tcpTarget(url: string): { host: string; port: number } {
  const target = new URL(url);
  if (target.protocol !== 'http:') throw new GatewayBridgeError(`gateway URL must be http: ${url}`);
  return { host: target.hostname.replace(/^\[|\]$/g, ''), port: Number(target.port || 80) };
}

/**
 * Connects to the first target that accepts (in order); what the client sent meanwhile is held
 * and written once connected. `refused` when every target refused the connection, undefined
 * after another error.
 */
function connectFirst(targets: readonly { host: string; port: number }[], onSocket: (socket: net.Socket) => void): Promise<net.Socket | undefined | 'refused'> {
  return new Promise((resolve) => {
    const attempt = (i: number): void => {
      if (i >= targets.length) return resolve('refused');
      const socket = net.connect(targets[i]!.port, targets[i]!.host);
      onSocket(socket);
      const onError = (error: Error): void => {
        socket.destroy();
        if (isConnectionFailure(error)) attempt(i + 1);
        else resolve(undefined);
      };
      socket.once('error', onError);
      socket.once('connect', () => {
        socket.off('error', onError);
        resolve(socket);
      });
    };
    attempt(0);
  });
}

/**
 * `connectFirst`, in rounds with growing delays while every replica refuses (a gateway restart),
 * for at most `outageMs`; stops early once `gone()` (the agent hung up, the bridge closed).
 */
async function connectThroughOutage(
  targets: readonly { host: string; port: number }[],
  onSocket: (socket: net.Socket) => void,
  outageMs: number,
  gone: () => boolean,
): Promise<net.Socket | undefined> {
  const deadline = Date.now() + outageMs;
  for (let delay = RECONNECT_DELAY_MS.first; ; delay = Math.min(delay * 2, RECONNECT_DELAY_MS.max)) {
    const result = await connectFirst(targets, onSocket);
    if (result !== 'refused') return result;
    const left = deadline - Date.now();
    if (left <= 0 || gone()) return undefined;
    await new Promise((resolve) => setTimeout(resolve, Math.min(delay, left)));
    if (gone()) return undefined;
  }
}

/** The bind mount that makes the forwarder visible inside a sandbox. */
export function forwarderMount(): { hostPath: string; sandboxPath: string } {
  return { hostPath: FORWARDER_HOST_DIR, sandboxPath: BRIDGE_SANDBOX_DIR };
}

/** Starts the host side of the bridge for one sandbox. */
export async function startGatewayBridge(options: GatewayBridgeOptions): Promise<GatewayBridge> {
  const targets = rendezvousOrder(options.gatewayUrls, options.sessionId).map(tcpTarget);
  const dir = join(options.sandboxTmpHostDir, SOCKET_SUBDIR);
  const hostSocketPath = join(dir, SOCKET_NAME);
  if (Buffer.byteLength(hostSocketPath) > MAX_SOCKET_PATH) {
    throw new GatewayBridgeError(
      `socket path too long for a Unix socket (${hostSocketPath}); use a shorter sandbox root`,
    );
  }
  await mkdir(dir, { recursive: true });
  await rm(hostSocketPath, { force: true });

  const connections = new Set<net.Socket>();
  // Every socket tried is tracked until it closes, so close() drops it and failed rounds leave none behind.
  const track = (socket: net.Socket): void => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  };
  const server = net.createServer((client) => {
    connections.add(client);
    // Held until a replica accepts: the client's first bytes must reach the replica it lands on.
    client.pause();
    const destroyClient = (): void => {
      client.destroy();
      connections.delete(client);
    };
    client.on('error', destroyClient);
    client.on('close', destroyClient);
    const outageMs = options.outageMs ?? GATEWAY_OUTAGE_DEFAULT_MS;
    const gone = () => client.destroyed || closed !== undefined;
    void connectThroughOutage(targets, track, outageMs, gone).then((upstream) => {
      if (!upstream || client.destroyed) {
        upstream?.destroy();
        return destroyClient();
      }
      const destroy = (): void => {
        destroyClient();
        upstream.destroy();
        connections.delete(upstream);
      };
      client.off('close', destroyClient);
      client.on('close', destroy);
      upstream.on('error', destroy);
      upstream.on('close', destroy);
      client.pipe(upstream);
      upstream.pipe(client);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(
        new GatewayBridgeError(`cannot listen on ${hostSocketPath}: ${err.message}`, {
          cause: err,
        }),
      ),
    );
    server.listen(hostSocketPath, resolve);
  });
  // The sandbox user may map to another uid: connecting needs write permission on the socket.
  await chmod(hostSocketPath, 0o666);

  let closed: Promise<void> | undefined;
  return {
    hostSocketPath,
    sandboxSocketPath: `/tmp/${SOCKET_SUBDIR}/${SOCKET_NAME}`,
    close() {
      closed ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const s of connections) s.destroy();
        await stopped;
        await rm(dir, { recursive: true, force: true });
      })();
      return closed;
    },
  };
}

/**
 * The agent's argv wrapped by the forwarder: it listens on `127.0.0.1:<port>`, runs the agent, and
 * exits with the agent's status. Options: `port` (default `BRIDGE_PORT`); `node`, the argv that
 * runs node in the sandbox (default: the sidecar's runtime under `BRIDGE_NODE_DIR`).
 */
export function bridgedCommand(
  argv: string[],
  bridge: Pick<GatewayBridge, 'sandboxSocketPath'>,
  options: { port?: number; node?: string[] } = {},
): string[] {
  return [
    ...(options.node ?? BRIDGE_NODE),
    `${BRIDGE_SANDBOX_DIR}/forwarder.mjs`,
    String(options.port ?? BRIDGE_PORT),
    bridge.sandboxSocketPath,
    ...argv,
  ];
}

/** The base URL the agent uses inside the sandbox. */
export function bridgedBaseUrl(port: number = BRIDGE_PORT): string {
  return `http://127.0.0.1:${port}`;
}

/** Where a bubblewrap provider with the default mount root keeps a sandbox's `/tmp` on the host. */
export function bubblewrapTmpHostDir(rootDir: string): (sandboxId: string) => string {
  return (sandboxId) => join(defaultMountRoot(rootDir), sandboxId, 'rw', 'tmp');
}
