// Runs inside a sandbox with the host's node: listens on 127.0.0.1:<port>, forwards every
// connection to the gateway bridge's Unix socket, and runs the agent command meanwhile. It must
// live in the agent's own exec because every exec gets a fresh network namespace; it exits with
// the agent's status once the agent is done.
//   node forwarder.mjs <port> <socket path> <agent argv...>
import { spawn } from 'node:child_process';
import net from 'node:net';
import { constants } from 'node:os';

const [port, socketPath, ...argv] = process.argv.slice(2);
if (!port || !socketPath || argv.length === 0) {
  console.error('usage: forwarder.mjs <port> <socket path> <command...>');
  process.exit(2);
}

const server = net.createServer((client) => {
  const upstream = net.connect(socketPath);
  // pipe() ends the other side when one side ends, so half-closes pass through; errors and full
  // closes tear down both.
  client.pipe(upstream);
  upstream.pipe(client);
  const destroy = () => {
    client.destroy();
    upstream.destroy();
  };
  for (const s of [client, upstream]) {
    s.on('error', destroy);
    s.on('close', destroy);
  }
});

server.on('error', (err) => {
  console.error(`forwarder: cannot listen on 127.0.0.1:${port}: ${err.message}`);
  process.exit(125);
});

server.listen(Number(port), '127.0.0.1', () => {
  const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit' });
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'])
    process.on(signal, () => child.kill(signal));
  child.on('error', (err) => {
    console.error(`forwarder: cannot run ${argv[0]}: ${err.message}`);
    process.exit(127);
  });
  child.on('exit', (code, signal) => {
    process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0));
  });
});
