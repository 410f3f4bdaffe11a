import { BackendError, engineStatus } from './backend.js';
import { engineErrorEvent } from './engine-error.js';
import { readSseBatches } from './sse.js';

/**
 * The JSON events of an engine's generation stream, all that one network chunk completes at once,
 * each checked for an error event first (thrown as a BackendError; `errorStatus` when the engine
 * names no code). Reads on past `[DONE]` to the body's end, so the connection goes back to the
 * pool for the next turn.
 */
export async function* readEngineEvents(body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>, url: string, errorStatus: number): AsyncGenerator<unknown[]> {
  let done = false;
  for await (const batch of readSseBatches(body)) {
    const events: unknown[] = [];
    for (const data of batch) {
      if (done || (done = data === '[DONE]')) continue;
      const value: unknown = JSON.parse(data);
      const failure = engineErrorEvent(value);
      if (failure) throw new BackendError(`engine ${url} failed the request: ${failure.message}`, engineStatus(failure.status ?? errorStatus));
      events.push(value);
    }
    if (events.length > 0) yield events;
  }
}
