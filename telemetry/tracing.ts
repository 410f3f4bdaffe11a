/**
 * OpenTelemetry traces, optional: with no OTLP endpoint configured no SDK starts and every span
 * helper here only runs the function it wraps.
 *
 * The tree is episode → turn → engine call, and episode → sandbox command. An episode runs as many
 * activities, on any worker, and its turns in any gateway replica: no process holds the episode
 * from start to end. So the episode's trace id and span id are derived from its episode id
 * (`episodeSpanContext`); every process that knows the id (the gateway from the session record)
 * parents its spans there, and the activity that records the episode's end emits the episode span
 * itself, with those ids and its real start time (`recordEpisodeSpan`).
 *
 * There is no context manager: parents are passed explicitly (`SpanParent`), so nothing depends
 * on async-context tracking.
 */
import { createHash } from 'node:crypto';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Attributes, type Context, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, RandomIdGenerator, TracerProvider, type IdGenerator } from '@opentelemetry/sdk-trace';

export interface TracingOptions {
  /** OTLP/HTTP base URL (`http://collector:4318`); spans go to `<url>/v1/traces`. Null: tracing off. */
  otlpEndpoint: string | null;
  /** `service.name` of the spans this process sends. */
  serviceName: string;
}

/** Where a span hangs in the tree; `null` when tracing is off. */
export type SpanParent = Context | null;

/** Random ids, except that the next span started by `recordEpisodeSpan` takes the episode's own. */
class EpisodeIdGenerator implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  next: { traceId: string; spanId: string } | null = null;
  generateTraceId(): string {
    return this.next?.traceId ?? this.random.generateTraceId();
  }
  generateSpanId(): string {
    return this.next?.spanId ?? this.random.generateSpanId();
  }
}

interface Running {
  provider: TracerProvider;
  tracer: Tracer;
  ids: EpisodeIdGenerator;
  /** Roles of this process that started tracing and have not stopped it. */
  users: number;
}

let running: Running | null = null;

/**
 * Starts exporting spans to `otlpEndpoint`. A process running several roles (the embedded stack)
 * shares one SDK: the `service.name` is the first role's. Returns the role's stop: the last one
 * flushes what is pending and stops the SDK.
 */
export function startTracing(options: TracingOptions): () => Promise<void> {
  if (options.otlpEndpoint === null) return async () => undefined;
  if (!running) {
    const ids = new EpisodeIdGenerator();
    const url = `${options.otlpEndpoint.replace(/\/+$/, '')}/v1/traces`;
    const provider = new TracerProvider({
      resource: resourceFromAttributes({ 'service.name': options.serviceName }),
      idGenerator: ids,
      spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }) })],
    });
    running = { provider, tracer: provider.getTracer('agent-rollout'), ids, users: 0 };
  }
  const mine = running;
  mine.users += 1;
  let stopped = false;
  return async () => {
    if (stopped) return;
    stopped = true;
    mine.users -= 1;
    if (mine.users > 0) return;
    if (running === mine) running = null;
    await mine.provider.shutdown();
  };
}

export function tracingEnabled(): boolean {
  return running !== null;
}

/** The first `length` hex digits of sha256 of `text` (32 for a trace id, 16 for a span id). */
function hashId(text: string, length: number): string {
  return createHash('sha256').update(text).digest('hex').slice(0, length);
}

function episodeIds(episodeId: string): { traceId: string; spanId: string } {
  return { traceId: hashId(`trace:${episodeId}`, 32), spanId: hashId(`span:${episodeId}`, 16) };
}

/** The episode's span as a parent, in any process; null when tracing is off. */
export function episodeSpanContext(episodeId: string): SpanParent {
  if (!running) return null;
  return trace.setSpanContext(ROOT_CONTEXT, { ...episodeIds(episodeId), traceFlags: TraceFlags.SAMPLED, isRemote: true });
}

/**
 * Runs `fn` inside a span named `name` under `parent`, handing it the span as the parent of its
 * own children; `outcome` adds attributes of the result, a throw marks the span as an error. With
 * no parent (tracing off) it only runs `fn`.
 */
export async function inSpan<T>(
  name: string,
  parent: SpanParent,
  attributes: Attributes,
  fn: (span: SpanParent) => Promise<T>,
  outcome?: (result: T) => Attributes,
): Promise<T> {
  if (!running || !parent) return fn(null);
  const span = running.tracer.startSpan(name, { attributes, kind: SpanKind.INTERNAL }, parent);
  try {
    const result = await fn(trace.setSpan(parent, span));
    if (outcome) span.setAttributes(outcome(result));
    return result;
  } catch (error) {
    span.recordException(error as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    span.end();
  }
}

/** Emits the episode's own span, from `startMs` to now, with the ids its children already name. */
export function recordEpisodeSpan(episodeId: string, startMs: number, attributes: Attributes): void {
  if (!running) return;
  const { tracer, ids } = running;
  // startSpan asks the generator synchronously: nothing else can start a span in between.
  ids.next = episodeIds(episodeId);
  const span = (() => {
    try {
      return tracer.startSpan('episode', { attributes: { 'rollout.episode_id': episodeId, ...attributes }, startTime: startMs, root: true });
    } finally {
      ids.next = null;
    }
  })();
  span.end();
}
