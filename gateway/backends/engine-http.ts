import http from 'node:http';
import https from 'node:https';
import { urlToHttpOptions } from 'node:url';

/** Keep-alive connections to the engines, shared by every backend (Node's defaults otherwise). */
const AGENTS: Record<string, http.Agent> = {
  'http:': new http.Agent({ keepAlive: true }),
  'https:': new https.Agent({ keepAlive: true }),
};

/** An engine's answer to a POST: its status and headers, the body as it arrives. */
export interface EngineAnswer {
  status: number;
  header(name: string): string | undefined;
  /** The body's chunks as they arrive; read it once, or call `text`. */
  body: AsyncIterable<Uint8Array>;
  /** The whole body as text (for error answers). */
  text(): Promise<string>;
}

/** An engine URL to POST to, parsed once when the backend is made rather than on every request. */
export interface EngineEndpoint {
  client: typeof http | typeof https;
  options: http.RequestOptions;
}

export function engineEndpoint(url: string): EngineEndpoint {
  const target = new URL(url);
  return {
    client: target.protocol === 'https:' ? https : http,
    options: { ...urlToHttpOptions(target), method: 'POST', agent: AGENTS[target.protocol] },
  };
}

/**
 * POSTs a JSON body to an engine over `node:http` rather than fetch: a generation streams one small
 * chunk per token or so, and fetch's web streams cost more CPU per chunk than the gateway's own
 * work on it. Rejects with the socket's error (its `code`, e.g. ECONNREFUSED) when the engine
 * cannot be reached, and with an AbortError when `signal` aborts; an abort while the body streams
 * ends the body's iteration with that error.
 */
export function postToEngine(endpoint: EngineEndpoint, body: Uint8Array | string, signal?: AbortSignal): Promise<EngineAnswer> {
  return new Promise((resolve, reject) => {
    const request = endpoint.client.request(
      {
        ...endpoint.options,
        signal,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (response) =>
        resolve({
          status: response.statusCode ?? 0,
          header(name) {
            const value = response.headers[name.toLowerCase()];
            return Array.isArray(value) ? value[0] : value;
          },
          body: response,
          async text() {
            let text = '';
            response.setEncoding('utf8');
            for await (const chunk of response) text += chunk;
            return text;
          },
        }),
    );
    // Kept after the answer arrived: a socket error later must not go unhandled (the body's
    // iteration reports it).
    request.on('error', reject);
    request.end(body);
  });
}
