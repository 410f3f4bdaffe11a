/**
 * Yields the `data:` payloads of a server-sent-events body, all the events a network chunk
 * completes at once: an engine streams one small event per token, and one step per chunk rather
 * than per event saves the reader's await on each.
 */
export async function* readSseBatches(body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>): AsyncGenerator<string[]> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    const batch: string[] = [];
    let start = 0;
    let end: number;
    while ((end = buffer.indexOf('\n\n', start)) >= 0) {
      const data = eventData(buffer, start, end);
      if (data) batch.push(data);
      start = end + 2;
    }
    // The rest is cut once per chunk, not once per event.
    if (start > 0) buffer = buffer.slice(start);
    if (batch.length > 0) yield batch;
  }
}

/** Yields the `data:` payloads of a server-sent-events body, one per event. */
export async function* readSseData(body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>): AsyncGenerator<string> {
  for await (const batch of readSseBatches(body)) yield* batch;
}

/** The data of the event `text[start, end)`: its `data:` lines' values, joined by newlines. */
function eventData(text: string, start: number, end: number): string {
  // The engines' events are one `data:` line each: no splitting for them.
  if (text.startsWith('data:', start)) {
    const newline = text.indexOf('\n', start);
    if (newline < 0 || newline >= end) return text.slice(start + 5, end).trimStart();
  }
  return text
    .slice(start, end)
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).trimStart())
    .join('\n');
}
