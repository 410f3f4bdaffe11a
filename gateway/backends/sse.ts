/** Yields the `data:` payloads of a server-sent-events body, one per event. */
export async function* readSseData(body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      // The engines' events are one `data:` line each: no splitting for them.
      if (event.startsWith('data:') && !event.includes('\n')) {
        const data = event.slice(5).trimStart();
        if (data) yield data;
        continue;
      }
      const data = event
        .split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      if (data) yield data;
    }
  }
}
