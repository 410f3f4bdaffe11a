/**
 * One process of `gateway.processes` (gateway-processes.ts), forked with an IPC channel. Its
 * configuration comes as the first message, never on the command line or in the environment (it
 * holds the admin token); it answers `listening` with its URL, or `failed`. SIGTERM stops it; it
 * ignores SIGINT (a terminal's Ctrl-C reaches the whole process group, and the parent decides);
 * it exits when the channel closes, so a parent that dies leaves no gateway behind.
 */
import { ipcTransport } from '../../scheduler/placement/ipc-client.js';
import { ConfigSchema } from '../config.js';
import { ChildStartMessage, type ChildMessage } from './gateway-child-protocol.js';
import { startGateway, type GatewayRole } from './gateway.js';

/** Sends `message`; resolves once it is on its way, so an exit right after does not drop it. */
const send = (message: ChildMessage) =>
  new Promise<void>((resolve) => process.send?.(message, () => resolve()) ?? resolve());
let role: GatewayRole | undefined;
let stopping = false;

async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  await role
    ?.stop()
    .catch((error: unknown) => console.error(`gateway process: stop: ${(error as Error).message}`));
  process.exit(0);
}

process.on('SIGINT', () => undefined);
process.on('SIGTERM', () => void stop());
process.on('disconnect', () => void stop());
process.once('message', (raw: unknown) => {
  // The first message is the start; later ones are placement answers (ipc-client.ts reads them).
  void (async () => {
    try {
      const start = ChildStartMessage.parse(raw);
      role = await startGateway(ConfigSchema.parse(start.config), { placement: start.placementOverIpc ? ipcTransport() : undefined });
      await send({ type: 'listening', url: role.url });
    } catch (error) {
      await send({ type: 'failed', message: (error as Error).message });
      process.exit(1);
    }
  })();
});
