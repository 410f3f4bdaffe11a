import { messageDigest, splitReasoning, type ChatMessage, type Codec, type ParsedTurn, type ToolCall, type ToolSpec } from '../codec/index.js';
import type { GatewayMetrics } from '../../telemetry/metrics.js';
import { StoreConflictError, type Store } from '../../trajectory/index.js';
import { isTimeout } from '../../scheduler/probe.js';
import { routeChainId, type CallRouter, type RouteCall } from '../../scheduler/router.js';
import { BackendError, type Backend, type GenerateRequest, type GenerateResult } from '../backends/backend.js';
import { generateResumable, type PolicyGate } from '../policy/resumable.js';
import { SAMPLING_DEFAULTS } from '../sampling-schema.js';
import { toolsKeyOf, type AssistantMessage, type Chain } from './chain.js';
import { planRequest, type ChainPlan } from './planner.js';
import type { GatewaySession } from './session.js';
import { GatewayError, SessionMovedError } from './errors.js';
import { findRepeatedTurn } from './replay.js';
import { markSent, type TurnTiming } from '../turn-timing.js';
import { episodeSpanContext, inSpan, type SpanParent } from '../../telemetry/tracing.js';

/** One model call as every protocol lowers it. */
export interface TurnInput {
  messages: ChatMessage[];
  tools: ToolSpec[] | undefined;
  maxTokens: number | undefined;
  temperature: number | undefined;
  topP: number | undefined;
  signal: AbortSignal;
  /** Sampled ids as the engine produces them, for streaming. */
  onTokens?: (ids: number[]) => void;
  /** The prompt is encoded and about to go to the engine (its size, for usage sent up front). */
  onPrompt?: (promptTokens: number) => void;
  /** The chain position the client asks for (`TURN_HEADER`): a repeat of a committed turn is answered from it. */
  turnPosition?: number;
  /** Which sampled calls the reply presents (the request's `tool_choice`, parallel calls). Default `all`. */
  calls?: CallsAllowed;
  /** A protocol's form of a presented call (a custom tool's text argument). Default: the call as parsed. */
  presentCall?: (call: ToolCall) => ToolCall;
  /** Filled with the engine's and the placement wait's share of the request's time. Default: not timed. */
  timing?: TurnTiming;
}

/**
 * `all`: every sampled call; `first`: only the first (parallel calls off); `none`: no call, the
 * model's call text stays in the content as it was sampled.
 */
export type CallsAllowed = 'all' | 'first' | 'none';

export interface TurnUsage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}

export type { AssistantMessage } from './chain.js';

export type TurnResult =
  | { kind: 'generated'; parsed: ParsedTurn; reply: AssistantMessage; finishReason: 'stop' | 'tool_calls' | 'length'; usage: TurnUsage }
  | { kind: 'aborted' }
  /** A session budget ran out: the protocol answers with a final message, no generation. */
  | BudgetResult;

type BudgetReason = 'max_turns' | 'context_length' | 'timeout';
type BudgetResult = { kind: 'budget'; reason: BudgetReason; usage: TurnUsage };

export interface TurnRunnerDeps {
  codec: Codec;
  store: Store;
  /** The engine client for an instance name. */
  backendFor(instance: string): Backend;
  /** Chooses the instance of every generation (in-process, or the shared placement service). */
  router: CallRouter;
  /** This gateway replica's id: a turn commits only while it owns the session. */
  owner: string;
  /** The engines' context length (prompt + max_tokens of one request); Infinity when unknown. */
  maxModelLen: number;
  /** Forgets a session whose ownership moved, so its next request rebuilds it from the store. */
  dropSession(session: GatewaySession): void;
  /** The policy version and pause: every generation runs under its lease. */
  policy: PolicyGate & { current(): { version: number } };
  /** Counts every committed turn and its tokens. */
  metrics: GatewayMetrics;
}

/** A chain held by one in-flight request: other requests that pick it wait for it. */
interface Reservation {
  plan: ChainPlan;
  /** Digests of the request's messages. */
  keys: string[];
  chain: Chain;
  release: () => void;
}

/**
 * Plans a request under the session lock and reserves the chosen chain. Requests on different
 * chains of one session (a title request beside the main loop, parallel sub-agents) generate
 * concurrently; a request for a chain that is generating waits and plans again.
 */
async function reserve(session: GatewaySession, input: TurnInput): Promise<Reservation | BudgetResult | { repeated: Chain }> {
  for (;;) {
    const step = await session.lock.run(async (): Promise<Reservation | BudgetResult | { repeated: Chain } | { wait: Promise<void> }> => {
      const keys = input.messages.map(messageDigest);
      const toolsKey = toolsKeyOf(input.tools);
      // Before the budgets: the repeated turn was within them when it was committed.
      const repeated = input.turnPosition === undefined ? undefined : findRepeatedTurn(session.chains, keys, toolsKey, input.turnPosition);
      if (repeated) return { repeated };
      const { budgets } = session.record.info;
      const exceeded: BudgetReason | undefined =
        session.liveTurns >= budgets.maxTurns
          ? 'max_turns'
          : Date.now() - session.record.createdAt > budgets.maxWallTimeMs
            ? 'timeout'
            : undefined;
      if (exceeded) {
        session.terminationReason ??= exceeded;
        return { kind: 'budget', reason: exceeded, usage: NO_USAGE };
      }
      const plan = planRequest(session.chains, input.messages, keys, toolsKey);
      const chain = plan.kind === 'new' ? session.newChain(input.tools) : plan.chain;
      if (chain.busy) return { wait: chain.busy };
      let release!: () => void;
      chain.busy = new Promise<void>((resolve) => (release = resolve));
      return {
        plan,
        keys,
        chain,
        release: () => {
          chain.busy = undefined;
          release();
        },
      };
    });
    if (!('wait' in step)) return step;
    await step.wait;
  }
}

const NO_USAGE: TurnUsage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };

/**
 * Generates on the instance the router chooses (waiting, when every engine's KV memory is
 * claimed, until one has room). An engine that fails (unreachable, 5xx) before any
 * token went to `onTokens` (the client's stream) is taken out and the call sent to another healthy
 * one with the same token ids: it only loses its cached prefix. Once tokens streamed, a failure is
 * final.
 */
async function generateRouted(
  deps: TurnRunnerDeps,
  call: RouteCall,
  request: GenerateRequest,
  timing: TurnTiming | undefined,
  turnSpan: SpanParent,
): Promise<GenerateResult> {
  const forward = request.onTokens;
  const tried = new Set<string>();
  let failure: unknown;
  for (;;) {
    const waitStarted = performance.now();
    // The first placement may wait for KV memory; a failover goes at once (the call was admitted).
    const placement =
      tried.size === 0
        ? await deps.router.acquire(call, request.signal)
        : tried.size < deps.router.maxAttempts
          ? await deps.router.place(call, tried)
          : undefined;
    const engineStarted = performance.now();
    if (timing) {
      timing.waitMs += engineStarted - waitStarted;
      markSent(timing, engineStarted);
    }
    if (!placement && request.signal?.aborted) return { ids: [], logprobs: [], finishReason: 'abort', promptTokens: call.promptIds.length, cachedTokens: 0 };
    // After a failover, the last engine's error says more than the lack of another engine.
    if (!placement) throw failure ?? new BackendError('no healthy engine instance to generate on', 503);
    let streamed = false;
    try {
      const engineCall = { 'rollout.engine': placement.instance, 'rollout.prompt_tokens': request.promptIds.length, 'rollout.attempt_index': tried.size };
      const result = await inSpan('engine.generate', turnSpan, engineCall, () =>
        deps.backendFor(placement.instance).generate({
          ...request,
          // Every chunk, streaming client or not, tells the registry the engine is answering.
          onTokens: (ids, logprobs) => {
            deps.router.progressed?.(placement);
            if (!forward) return;
            streamed = true;
            forward(ids, logprobs);
          },
        }),
        (r) => ({ 'rollout.completion_tokens': r.ids.length, 'rollout.cached_tokens': r.cachedTokens, 'rollout.finish_reason': r.finishReason }),
      );
      deps.router.finished(placement, result.ids);
      return result;
    } catch (error) {
      const engineDown = error instanceof BackendError && error.engineFault && !streamed;
      deps.router.failed(placement, engineDown, isTimeout(error));
      if (!engineDown) throw error;
      tried.add(placement.instance);
      failure = error;
    } finally {
      // A failed attempt's time is the engine's too: the gateway waited on it.
      if (timing) {
        timing.lastAnsweredAt = performance.now();
        timing.engineMs += timing.lastAnsweredAt - engineStarted;
        timing.generations += 1;
      }
    }
  }
}

/**
 * The answer of a chain's last turn, as it was committed: its reply, finish reason and sampled
 * tokens (streamed again to `onTokens`). Nothing is generated or stored; the engine saw none of it
 * again, so no prompt token counts as cached.
 */
function repeatedTurn(chain: Chain, input: TurnInput): TurnResult {
  const turn = chain.turns[chain.turns.length - 1]!;
  const reply = chain.lastReply!;
  const sampled = Array.from(chain.tokens.range(turn.sampledFrom));
  input.onPrompt?.(turn.sampledFrom);
  input.onTokens?.(sampled);
  return {
    kind: 'generated',
    parsed: { reasoning: reply.reasoning_content, content: reply.content, toolCalls: reply.tool_calls ?? [], invalidToolCalls: 0 },
    reply,
    finishReason: turn.finishReason,
    usage: { promptTokens: turn.sampledFrom, completionTokens: sampled.length, cachedTokens: 0 },
  };
}

/** Whether the reply may present calls: the request offers tools and `tool_choice` is not `none`. */
export function presentsCalls(input: Pick<TurnInput, 'tools' | 'calls'>): boolean {
  return input.calls !== 'none' && input.tools !== undefined && input.tools.length > 0;
}

/**
 * The sampled turn as the client gets it, which is also the reply the chain stores and matches the
 * next request's history against (gateway spec, "Chains"): the client echoes what it was given.
 * The sampled tokens are kept whatever is presented. A request without tools gets no call either.
 */
function presentTurn(codec: Codec, text: string, input: TurnInput): ParsedTurn {
  if (!presentsCalls(input)) {
    const { reasoning, rest } = splitReasoning(text);
    return { reasoning, content: rest.trim(), toolCalls: [], invalidToolCalls: 0 };
  }
  const parsed = codec.parseTurn(text, input.tools);
  const calls = input.calls === 'first' ? parsed.toolCalls.slice(0, 1) : parsed.toolCalls;
  return { ...parsed, toolCalls: input.presentCall ? calls.map(input.presentCall) : calls };
}

/**
 * Runs one model call against a session: plan the chain, encode only what is new, generate with
 * token ids, and commit the turn (store first, then memory) — or leave everything as it was when
 * the generation is aborted or fails.
 */
export function runTurn(deps: TurnRunnerDeps, session: GatewaySession, input: TurnInput): Promise<TurnResult> {
  const { episodeId, sessionId, attempt } = session.record;
  return inSpan('turn', episodeSpanContext(episodeId), { 'rollout.session_id': sessionId, 'rollout.attempt': attempt }, (span) => runTurnIn(deps, session, input, span));
}

async function runTurnIn(deps: TurnRunnerDeps, session: GatewaySession, input: TurnInput, span: SpanParent): Promise<TurnResult> {
  const reserved = await reserve(session, input);
  if ('repeated' in reserved) return repeatedTurn(reserved.repeated, input);
  if (!('chain' in reserved)) return reserved;
  const { plan, keys, chain, release } = reserved;
  try {
    const { budgets, homeInstance } = session.record.info;
    // A session stored before a key existed (opened by an older gateway) takes its default, never the engine's.
    const sampling = { ...SAMPLING_DEFAULTS, ...session.record.info.sampling };
    const { encoder, tokenizer } = deps.codec;
    const baseTokens = plan.kind === 'new' ? 0 : plan.baseTokens;
    let delta: number[];
    if (baseTokens === 0) delta = await encoder.encodeFirst(plan.appended, input.tools);
    else {
      // A turn cut by max_tokens has no end-of-turn token; the template would have closed it.
      const closed = chain.tokens.at(baseTokens - 1) === encoder.endOfTurnId;
      const appended = await encoder.encodeAppended(plan.appended, input.tools);
      // Copied only to prepend the closing token: the usual turn ended with it already.
      delta = closed ? appended : [encoder.endOfTurnId, ...appended];
    }
    // A view of the chain's buffer (a copy only for a rollback): nothing O(context) per turn.
    const prompt = chain.tokens.withAppended(baseTokens, delta);
    if (budgets.maxContextTokens - prompt.length <= 0) {
      session.terminationReason ??= 'context_length';
      return { kind: 'budget', reason: 'context_length', usage: { ...NO_USAGE, promptTokens: prompt.length } };
    }
    // The engine refuses a request whose prompt + max_tokens exceeds its context length.
    if (deps.maxModelLen - prompt.length <= 0)
      throw new GatewayError(`the prompt of ${prompt.length} tokens leaves no room to sample under the engine's max_model_len of ${deps.maxModelLen}`, 400, 'invalid_request_error');
    const room = Math.min(budgets.maxContextTokens, deps.maxModelLen) - prompt.length;

    input.onPrompt?.(prompt.length);
    const started = performance.now();
    const maxTokens = Math.min(input.maxTokens ?? sampling.maxTokens, room);
    const temperature = input.temperature ?? sampling.temperature;
    const result = await generateResumable(
      deps.policy,
      { chainId: routeChainId(session.record.sessionId, chain.index), promptIds: prompt, expectedOutputTokens: maxTokens, home: homeInstance },
      {
        promptIds: prompt,
        maxTokens,
        temperature,
        topP: input.topP ?? sampling.topP,
        topK: sampling.topK,
        minP: sampling.minP,
        presencePenalty: sampling.presencePenalty,
        frequencyPenalty: sampling.frequencyPenalty,
        repetitionPenalty: sampling.repetitionPenalty,
        signal: input.signal,
        onTokens: input.onTokens,
      },
      (call, request) => generateRouted(deps, call, request, input.timing, span),
    );
    if (result.finishReason === 'abort') return { kind: 'aborted' };

    const sampledText = result.ids[result.ids.length - 1] === encoder.endOfTurnId ? result.ids.slice(0, -1) : result.ids;
    const parsed = presentTurn(deps.codec, tokenizer.decode(sampledText), input);
    const reply: AssistantMessage = { role: 'assistant', content: parsed.content };
    if (parsed.reasoning !== undefined) reply.reasoning_content = parsed.reasoning;
    if (parsed.toolCalls.length > 0) reply.tool_calls = parsed.toolCalls;
    const finishReason = result.finishReason === 'length' ? 'length' : parsed.toolCalls.length > 0 ? 'tool_calls' : 'stop';

    await session.lock.run(async () => {
      const rolledBack = plan.kind === 'rollback' ? chain.turns[chain.turns.length - 1] : undefined;
      await deps.store.commitTurn(
        {
          sessionId: session.record.sessionId,
          chainIndex: chain.index,
          seq: chain.nextSeq,
          turnIndex: chain.turns.length - (rolledBack ? 1 : 0),
          promptDelta: delta,
          sampled: result.ids,
          logprobs: result.logprobs,
          // A turn a pause cut and resumed is marked so (trajectory spec), whatever ended it.
          finishReason: result.resumed ? 'abort_resumed' : finishReason === 'tool_calls' ? 'tool_call' : finishReason,
          cachedTokens: result.cachedTokens,
          temperature,
          logprobsMode: sampling.logprobsMode,
          version: result.versions.at(-1) ?? deps.policy.current().version,
          sampledVersions: result.versions,
          tLlmS: (performance.now() - started) / 1000,
          messagesJson: JSON.stringify(plan.appended),
          replyJson: JSON.stringify(reply),
          toolsJson: input.tools ? JSON.stringify(input.tools) : null,
          rolledBack: false,
        },
        { rolledBackSeq: rolledBack?.seq, owner: deps.owner },
      ).catch((error: unknown) => {
        // Another replica took the session over (or committed here first): this copy is stale.
        if (!(error instanceof StoreConflictError)) throw error;
        deps.dropSession(session);
        throw new SessionMovedError(error.message);
      });
      if (rolledBack) {
        session.rollbacks += 1;
        session.rolledBackTokens += chain.tokens.length - rolledBack.sampledFrom;
        session.toolCalls -= rolledBack.toolCalls;
      } else session.liveTurns += 1;
      session.toolCalls += parsed.toolCalls.length;
      const baseHistory = plan.kind === 'new' ? 0 : plan.baseHistory;
      chain.commit({
        baseTokens,
        baseHistory,
        appended: plan.appended,
        appendedKeys: keys.slice(baseHistory),
        delta,
        sampled: result.ids,
        reply,
        rolledBack: plan.kind === 'rollback',
        finishReason,
      });
    });
    deps.metrics.turn(finishReason, prompt.length, result.ids.length, result.cachedTokens);
    return {
      kind: 'generated',
      parsed,
      reply,
      finishReason,
      usage: { promptTokens: prompt.length, completionTokens: result.ids.length, cachedTokens: result.cachedTokens },
    };
  } finally {
    release();
  }
}
