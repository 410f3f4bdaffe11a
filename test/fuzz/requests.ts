import { encode, mutateText, mutateValue } from './mutate.js';
import type { Prng } from './prng.js';
import { SAMPLING_DEFAULTS } from '../../gateway/sampling-schema.js';

/** One generated request, sent with fetch (or over a raw socket when `raw` is set). */
export interface FuzzRequest {
  /** Which generator made it, for the histogram. */
  kind: string;
  target: 'gateway' | 'api';
  method: 'GET' | 'POST';
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** Bytes written as they are to a TCP connection (malformed HTTP). */
  raw?: Buffer;
}

/** What the generators may use: the session the fuzz owns, the batch running beside it, tokens. */
export interface FuzzTargets {
  /** A gateway session whose context budget is one token: valid requests are encoded, never sent to an engine. */
  sessionKey: string;
  adminToken: string;
  apiToken: string;
  /** The batch running beside the fuzz: read-only routes only. */
  batchId: string;
  /** Both servers' body limit: an oversized request sends one byte more. */
  maxBodyBytes: number;
}

const SHELL = { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] };

const TEMPLATES = {
  '/v1/chat/completions': {
    model: 'Qwen/Qwen3-8B',
    messages: [
      { role: 'system', content: 'You fix code.' },
      { role: 'user', content: [{ type: 'text', text: 'Fix the widget' }] },
      { role: 'assistant', content: null, reasoning_content: 'Look first.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'shell', arguments: '{"command":"ls"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'widget.py' },
    ],
    tools: [{ type: 'function', function: { name: 'shell', description: 'Run a command.', parameters: SHELL } }],
    max_tokens: 16,
    temperature: 1,
    stream: false,
  },
  '/v1/responses': {
    model: 'Qwen/Qwen3-8B',
    instructions: 'You fix code.',
    input: [
      { type: 'message', role: 'user', content: 'Fix the widget' },
      { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Look first.' }] },
      { type: 'function_call', call_id: 'call_1', name: 'shell', arguments: '{"command":"ls"}' },
      { type: 'function_call_output', call_id: 'call_1', output: 'widget.py' },
    ],
    tools: [{ type: 'function', name: 'shell', parameters: SHELL }, { type: 'web_search' }],
    max_output_tokens: 16,
    stream: false,
  },
  '/v1/messages': {
    model: 'claude',
    max_tokens: 16,
    system: [{ type: 'text', text: 'You fix code.' }],
    messages: [
      { role: 'user', content: 'Fix the widget' },
      { role: 'assistant', content: [{ type: 'thinking', thinking: 'Look first.' }, { type: 'tool_use', id: 'tu_1', name: 'Bash', input: { command: 'ls' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'tu_1', content: 'widget.py' }] },
    ],
    tools: [{ name: 'Bash', input_schema: SHELL }],
    stream: false,
  },
  '/v1/messages/count_tokens': {
    messages: [{ role: 'user', content: 'Fix the widget' }],
    tools: [{ name: 'Bash', input_schema: SHELL }],
  },
} as const;

const PROTOCOL_ROUTES = Object.keys(TEMPLATES) as (keyof typeof TEMPLATES)[];
const CONTENT_TYPES = ['application/json', 'application/json; charset=utf-8', 'text/plain', 'application/xml', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded', 'application/json; charset=utf-16', ''];

function withContentType(rng: Prng, headers: Record<string, string>, { keep }: { keep: boolean }): Record<string, string> {
  const type = keep || rng.chance(0.8) ? 'application/json' : rng.pick(CONTENT_TYPES);
  return type ? { ...headers, 'content-type': type } : headers;
}

/** A body from a template: mutated as a value, then (sometimes) as text. */
function body(rng: Prng, template: unknown, options: { guard?: (value: Record<string, unknown>) => void } = {}): Buffer {
  const value = mutateValue(rng, template, { root: !options.guard });
  // Requests that could change the running stack (start or cancel batches, pause) are kept invalid.
  if (options.guard) options.guard(value as Record<string, unknown>);
  const text = encode(value);
  if (rng.chance(0.15)) return mutateText(rng, text, { onlyTruncate: Boolean(options.guard) });
  return Buffer.from(text);
}

function sessionHeaders(rng: Prng, targets: FuzzTargets): { prefix: string; headers: Record<string, string> } {
  const key = rng.chance(0.7) ? targets.sessionKey : rng.pick(['sk-unknown', '', 'Bearer', 'x'.repeat(2000), targets.adminToken, `${targets.sessionKey}x`]);
  switch (rng.int(0, 3)) {
    case 0:
      return { prefix: '', headers: { authorization: `Bearer ${key}` } };
    case 1:
      return { prefix: '', headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01' } };
    case 2:
      return { prefix: `/s/${urlPiece(key) || 'none'}`, headers: {} };
    default:
      return { prefix: '', headers: {} };
  }
}

/** A mutated request to one of the four protocol routes, at the root or under `/s/<key>`. */
function protocolRequest(rng: Prng, targets: FuzzTargets): FuzzRequest {
  const route = rng.pick(PROTOCOL_ROUTES);
  const { prefix, headers } = sessionHeaders(rng, targets);
  const template = { ...TEMPLATES[route], ...(route !== '/v1/messages/count_tokens' && rng.chance(0.3) ? { stream: true } : {}) };
  return { kind: route, target: 'gateway', method: 'POST', path: `${prefix}${route}`, headers: withContentType(rng, headers, { keep: false }), body: body(rng, template) };
}

const BAD_IDS = ['..', '.', '%2F', 'a%2Fb', '%2E%2E', '-x', 'x'.repeat(300), '%00', '%F0%9F%98%80', '%ZZ', 'batch%20id', '__proto__'];

function batchId(rng: Prng, targets: FuzzTargets, { mayBeOurs }: { mayBeOurs: boolean }): string {
  if (mayBeOurs && rng.chance(0.4)) return targets.batchId;
  return rng.chance(0.5) ? rng.pick(BAD_IDS) : `fuzz-${rng.int(0, 1e6)}`;
}

/** Percent-encodes every UTF-8 byte (lone surrogates included, which `encodeURIComponent` refuses). */
function urlPiece(text: string): string {
  return Buffer.from(text).toString('hex').replace(/../g, '%$&');
}

function query(rng: Prng, pairs: Record<string, string[]>): string {
  const parts: string[] = [];
  for (const [key, values] of Object.entries(pairs)) if (rng.chance(0.7)) parts.push(`${key}=${urlPiece(rng.pick(values))}`);
  if (rng.chance(0.2)) parts.push(`${urlPiece(rng.awkward())}=${urlPiece(rng.awkward())}`);
  return parts.length > 0 ? `?${parts.join('&')}` : '';
}

/** A mutated request to one of the batch API's routes. */
function apiRequest(rng: Prng, targets: FuzzTargets): FuzzRequest {
  const auth: Record<string, string> = rng.chance(0.9) ? { authorization: `Bearer ${targets.apiToken}` } : rng.chance(0.5) ? { authorization: 'Bearer wrong' } : {};
  const json = withContentType(rng, auth, { keep: true });
  const get = (kind: string, path: string): FuzzRequest => ({ kind, target: 'api', method: 'GET', path, headers: auth });
  const post = (kind: string, path: string, bytes: Buffer, headers = json): FuzzRequest => ({ kind, target: 'api', method: 'POST', path, headers, body: bytes });
  switch (rng.int(0, 10)) {
    case 0:
      return post('api create', '/v1/batches', body(rng, { batch_id: 'fuzz-create', tasks: 'builtin', task_ids: ['py-slugify-1'], n: 2, concurrency: 2, limits: { max_turns: 3 }, sampling: { temperature: 1 } }, {
        guard: (value) => {
          value.n = rng.pick([0, -1, 1.5, '2', true, null]);
        },
      }));
    case 1:
      return get('api status', `/v1/batches/${batchId(rng, targets, { mayBeOurs: true })}${query(rng, { x: ['1'] })}`);
    case 2: {
      // A valid timeout on the running batch would long-poll: the fuzz asks for none or a bad one.
      const after = rng.pick(['0', '-1', '1e400', 'x', '99999999999999999999', '']);
      const timeout = rng.pick(['0', '-1', '301', 'NaN', 'x']);
      return get('api groups', `/v1/batches/${batchId(rng, targets, { mayBeOurs: true })}/groups?after=${after}&timeout_s=${timeout}`);
    }
    case 3:
      return get('api data', `/v1/batches/${batchId(rng, targets, { mayBeOurs: true })}/data${query(rng, { group_id: ['', 'nope', '..', targets.batchId], unacked: ['true', 'false', 'yes', ''] })}`);
    case 4:
      return post('api ack', `/v1/batches/${batchId(rng, targets, { mayBeOurs: true })}/ack`, body(rng, { group_ids: ['nope'] }));
    case 5:
      return post('api cancel', `/v1/batches/${batchId(rng, targets, { mayBeOurs: false })}/cancel`, body(rng, {}), rng.chance(0.5) ? json : auth);
    case 6:
      return post('api logprobs', `/v1/batches/${batchId(rng, targets, { mayBeOurs: true })}/logprobs`, body(rng, { trajectories: [{ trajectory_id: 'nope', logprobs: [-0.5, -1], layout: 'response' }], top_k: 5 }));
    case 7:
      return get('api report', `/v1/batches/${batchId(rng, targets, { mayBeOurs: true })}/logprobs/${rng.pick(['00000000-0000-4000-8000-000000000000', 'not-a-uuid', '..', 'x'.repeat(500)])}`);
    case 8:
      return rng.chance(0.5)
        ? get('api policy', '/v1/policy')
        : post('api pause', '/v1/policy/pause', body(rng, { mode: 'finish' }, { guard: (value) => void (value.mode = rng.pick(['', 'FINISH', 1, null, ['finish']])) }));
    case 9:
      return post('api resume', '/v1/policy/resume', body(rng, { version: 1 }, { guard: (value) => void (value.version = rng.pick([-1, 1.5, '1', null, true])) }));
    default:
      return get('api unknown', rng.pick(['/v1', '/v1/batches', '/v1/batches/', '/openapi.json', '/health', `/${urlPiece(rng.awkward())}`, '/v1/batches/x/unknown']));
  }
}

/** The gateway's admin routes: wrong tokens, and with the right one only requests that change nothing running. */
function adminRequest(rng: Prng, targets: FuzzTargets): FuzzRequest {
  const auth: Record<string, string> = rng.chance(0.5) ? { authorization: `Bearer ${targets.adminToken}` } : rng.pick<Record<string, string>>([{}, { authorization: `Bearer ${targets.sessionKey}` }, { authorization: 'Basic eA==' }]);
  const headers = withContentType(rng, auth, { keep: true });
  const sessionInfo = {
    sessionId: 'fuzz-open',
    episodeId: 'fuzz-open',
    attempt: 0,
    info: { batchId: 'fuzz', taskId: 't', groupId: 'g', episodeIndex: 0, agentName: 'fuzz', homeInstance: 'sim-0', budgets: { maxTurns: 1, maxContextTokens: 1, maxWallTimeMs: 1000 }, sampling: { ...SAMPLING_DEFAULTS, maxTokens: 1 } },
  };
  switch (rng.int(0, 4)) {
    case 0:
      return { kind: 'admin open', target: 'gateway', method: 'POST', path: '/admin/v1/sessions', headers, body: body(rng, sessionInfo) };
    case 1:
      return { kind: 'admin close', target: 'gateway', method: 'POST', path: `/admin/v1/sessions/${rng.pick(BAD_IDS)}/close`, headers, body: body(rng, { reason: 'stop' }) };
    case 2:
      return { kind: 'admin pause', target: 'gateway', method: 'POST', path: '/admin/v1/policy/pause', headers, body: body(rng, { mode: 'finish' }, { guard: (value) => void (value.mode = rng.pick(['', 'x', 0])) }) };
    case 3:
      return { kind: 'admin resume', target: 'gateway', method: 'POST', path: '/admin/v1/policy/resume', headers, body: body(rng, { version: 1 }, { guard: (value) => void (value.version = rng.pick([-1, 'x', 0.5])) }) };
    default:
      return { kind: 'admin get', target: 'gateway', method: 'GET', path: rng.pick(['/admin/v1/policy', '/admin/v1/sessions', '/admin/v1/nothing', '/health', '/v1/models', '/s/x/v1/models']), headers: auth };
  }
}

/** Malformed HTTP over a raw socket: what fetch will not send. */
function rawRequest(rng: Prng, targets: FuzzTargets): FuzzRequest {
  const target = rng.chance(0.7) ? 'gateway' : 'api';
  const path = target === 'gateway' ? rng.pick(PROTOCOL_ROUTES) : '/v1/batches/x/ack';
  const auth = target === 'gateway' ? targets.sessionKey : targets.apiToken;
  const json = '{"messages":[{"role":"user","content":"hi"}]}';
  const lines = [
    // Content-Length larger than what follows: the connection closes before a body is whole.
    `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${auth}\r\nContent-Type: application/json\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{"a":`,
    `POST ${path} HTTP/1.1\r\nHost: x\r\nX-Big: ${'h'.repeat(rng.pick([20_000, 70_000]))}\r\nConnection: close\r\n\r\n`,
    `POST ${path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\nConnection: close\r\n\r\nzz\r\n${json}\r\n0\r\n\r\n`,
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{}`,
    `GET ${path}\u0000 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
    `POST ${path} HTTP/1.1\r\nHost: x\r\nBad Header Name: v\r\nConnection: close\r\n\r\n`,
    `${rng.bytes(rng.int(1, 512)).toString('latin1')}\r\n\r\n`,
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${json.length}\r\nAuthorization: Bearer ${auth}\r\n${Array.from({ length: 200 }, (_, i) => `X-H${i}: v`).join('\r\n')}\r\nConnection: close\r\n\r\n${json}`,
  ];
  return { kind: `raw ${target}`, target, method: 'POST', path, headers: {}, raw: Buffer.from(rng.pick(lines), 'latin1') };
}

/** A JSON body one byte over the limit, to a protocol route or an API route that takes a body. */
function oversizeRequest(rng: Prng, targets: FuzzTargets): FuzzRequest {
  const target = rng.chance(0.6) ? 'gateway' : 'api';
  const path = target === 'gateway' ? rng.pick(PROTOCOL_ROUTES) : rng.pick(['/v1/batches', `/v1/batches/${targets.batchId}/logprobs`]);
  const auth = target === 'gateway' ? targets.sessionKey : targets.apiToken;
  const head = '{"messages":"';
  const tail = '"}';
  const body = Buffer.from(head + 'x'.repeat(targets.maxBodyBytes + 1 - head.length - tail.length) + tail);
  return { kind: `oversize ${target}`, target, method: 'POST', path, headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' }, body };
}

/** The next request of a seeded run: protocol routes most, then the API, the admin routes, raw HTTP and oversized bodies. */
export function generateRequest(rng: Prng, targets: FuzzTargets): FuzzRequest {
  const roll = rng.next();
  if (roll < 0.01) return oversizeRequest(rng, targets);
  if (roll < 0.55) return protocolRequest(rng, targets);
  if (roll < 0.8) return apiRequest(rng, targets);
  if (roll < 0.93) return adminRequest(rng, targets);
  return rawRequest(rng, targets);
}
