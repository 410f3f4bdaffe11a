import { PlacementIpcReply, isPlacementMessage, type PlacementIpcRequest } from './ipc-messages.js';
import type { PlacementReply, PlacementTransport } from './transport.js';

export class PlacementChannelError extends Error {
  override name = 'PlacementChannelError';
}

/**
 * The placement of the parent process, over this process's IPC channel (ipc-server.ts answers):
 * for the processes of `gateway.processes`, whose parent runs the placement they share. Calls are
 * numbered; an aborted one is aborted in the parent too; calls unanswered when the channel closes
 * reject (the RemoteRouter then routes locally, as when an HTTP service is unreachable).
 */
export function ipcTransport(channel: NodeJS.Process = process): PlacementTransport {
  const pending = new Map<number, { resolve: (reply: PlacementReply) => void; reject: (error: Error) => void }>();
  let next = 0;
  channel.on('message', (raw: unknown) => {
    if (!isPlacementMessage(raw)) return;
    const reply = PlacementIpcReply.safeParse(raw);
    if (!reply.success) return;
    const call = pending.get(reply.data.id);
    pending.delete(reply.data.id);
    call?.resolve({ status: reply.data.status, body: reply.data.body });
  });
  channel.on('disconnect', () => {
    for (const call of pending.values()) call.reject(new PlacementChannelError('the IPC channel to the placement closed'));
    pending.clear();
  });
  const post = (message: PlacementIpcRequest, onError: (error: Error) => void) => {
    if (!channel.connected || !channel.send) return onError(new PlacementChannelError('no IPC channel to the placement (not a forked gateway process, or its parent is gone)'));
    channel.send(message, undefined, undefined, (error: Error | null) => error && onError(error));
  };
  return {
    name: 'the parent process (IPC)',
    send(path, body, signal) {
      return new Promise<PlacementReply>((resolve, reject) => {
        const id = next++;
        const settle = () => {
          pending.delete(id);
          signal?.removeEventListener('abort', aborted);
        };
        const aborted = () => {
          settle();
          post({ type: 'placement-abort', id }, () => undefined);
          reject(signal!.reason instanceof Error ? signal!.reason : new DOMException('placement call aborted', 'AbortError'));
        };
        if (signal?.aborted) return reject(new DOMException('placement call aborted', 'AbortError'));
        signal?.addEventListener('abort', aborted, { once: true });
        pending.set(id, {
          resolve: (reply) => (settle(), resolve(reply)),
          reject: (error) => (settle(), reject(error)),
        });
        post({ type: 'placement-call', id, path, body }, (error) => pending.get(id)?.reject(error));
      });
    },
  };
}
