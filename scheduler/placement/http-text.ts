import http from 'node:http';
import https from 'node:https';

/** One request to the placement service: its method, JSON body and headers. */
export interface TextRequest {
  method: 'GET' | 'POST';
  headers: Record<string, string>;
  body?: string;
  signal?: AbortSignal;
}

export interface TextAnswer {
  status: number;
  text: string;
}

/**
 * Keep-alive connections to placement services. A gateway process calls its service on every model
 * call; over `node:http` with a kept connection that costs a fraction of what `fetch` does (its
 * Request, web streams and abort signals per call). The engines' twin is `gateway/backends/engine-http.ts`.
 */
const AGENTS = { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) };

/**
 * Sends `request` to `url` and reads the whole answer as text. Rejects with the socket's error (its
 * `code`, e.g. ECONNREFUSED) when the service cannot be reached, and with an AbortError when
 * `request.signal` aborts.
 */
export function requestText(url: URL, request: TextRequest): Promise<TextAnswer> {
  const client = url.protocol === 'https:' ? https : http;
  const agent = url.protocol === 'https:' ? AGENTS['https:'] : AGENTS['http:'];
  const headers = request.body === undefined ? request.headers : { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) };
  return new Promise((resolve, reject) => {
    const req = client.request(url, { method: request.method, headers, agent, signal: request.signal }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, text }));
      response.on('error', reject);
    });
    req.on('error', reject);
    req.end(request.body);
  });
}
