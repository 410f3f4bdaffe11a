import type { ChildProcess } from 'node:child_process';
import { errorAnswer, type SharedPlacement } from './shared-placement.js';
import { isPlacementMessage, PlacementIpcRequest, type PlacementIpcReply } from './ipc-messages.js';

/**
 * Answers the placement calls `child` sends over its IPC channel (ipc-client.ts) with `placement`,
 * as service.ts answers them over HTTP, without HTTP's cost on either side. A call the child aborts,
 * or any it left unanswered when its channel closes, is dropped as an HTTP caller's would be; when
 * the channel closes (the child died), the placements it held are released at once (logged), not
 * a lease later.
 * A malformed placement message is reported on `log` and, when it names its call, answered 400.
 */
export function servePlacement(child: ChildProcess, placement: SharedPlacement, log: (line: string) => void): void {
  const pending = new Map<number, AbortController>();
  const caller = `gateway process ${child.pid}`;
  const reply = (message: PlacementIpcReply) => {
    // A send that fails means the channel closed: the child is gone, its placements lapse.
    if (child.connected) child.send(message, () => undefined);
  };
  const answer = async (id: number, call: () => Promise<object | undefined> | object | undefined, gone: AbortSignal) => {
    try {
      const body = await call();
      if (!gone.aborted) reply({ type: 'placement-reply', id, status: body === undefined ? 204 : 200, body });
    } catch (error) {
      if (!gone.aborted) reply({ type: 'placement-reply', id, ...errorAnswer(error as Error) });
    } finally {
      pending.delete(id);
    }
  };
  child.on('message', (raw: unknown) => {
    if (!isPlacementMessage(raw)) return;
    const parsed = PlacementIpcRequest.safeParse(raw);
    if (!parsed.success) {
      const id = (raw as { id?: unknown }).id;
      log(`${caller}: malformed placement message: ${parsed.error.message.slice(0, 300)}`);
      if (typeof id === 'number') reply({ type: 'placement-reply', id, status: 400, body: { error: { message: 'malformed placement message', type: 'PlacementRequestError' } } });
      return;
    }
    const message = parsed.data;
    if (message.type === 'placement-abort') return pending.get(message.id)?.abort();
    const controller = new AbortController();
    pending.set(message.id, controller);
    void answer(message.id, () => placement.call(message.path, message.body, controller.signal, caller), controller.signal);
  });
  child.once('disconnect', () => {
    for (const controller of pending.values()) controller.abort();
    const released = placement.releaseCaller(caller);
    if (released > 0) log(`${caller}: its channel closed; released the ${released} placement(s) it held`);
  });
}
