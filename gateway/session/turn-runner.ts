import { canonicalKey, type ChatMessage, type Codec, type ParsedTurn, type ToolSpec } from '../codec/index.js';
import type { TrajectoryStore } from '../../trajectory/index.js';
import type { Backend } from '../backends/backend.js';
import { toolsKeyOf } from './chain.js';
import { planRequest } from './planner.js';
import type { GatewaySession } from './session.js';

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
}

export interface TurnUsage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}

export type AssistantMessage = Extract<ChatMessage, { role: 'assistant' }>;

export type TurnResult =
  | { kind: 'generated'; parsed: ParsedTurn; reply: AssistantMessage; finishReason: 'stop' | 'tool_calls' | 'length'; usage: TurnUsage }
  | { kind: 'aborted' }
  /** A session budget ran out: the protocol answers with a final message, no generation. */
  | { kind: 'budget'; reason: 'max_turns' | 'context_length' | 'timeout'; usage: TurnUsage };

export interface TurnRunnerDeps {
  codec: Codec;
  store: TrajectoryStore;
  /** The engine client for an instance name (the session's home instance). */
  backendFor(instance: string): Backend;
  /** The policy version engines currently serve. */
  policyVersion(): number;
}

/**
 * Runs one model call against a session: plan the chain, encode only what is new, generate with
 * token ids, and commit the turn (store first, then memory) — or leave everything as it was when
 * the generation is aborted or fails.
 */
export async function runTurn(deps: TurnRunnerDeps, session: GatewaySession, input: TurnInput): Promise<TurnResult> {
  return session.lock.run(async () => {
    const { budgets, sampling, homeInstance } = session.record.info;
    const noUsage = { promptTokens: 0, completionTokens: 0, cachedTokens: 0 };
    const exceeded = session.liveTurns >= budgets.maxTurns
      ? 'max_turns'
      : Date.now() - session.record.createdAt > budgets.maxWallTimeMs
        ? 'timeout'
        : undefined;
    if (exceeded) {
      session.terminationReason ??= exceeded;
      return { kind: 'budget', reason: exceeded, usage: noUsage };
    }

    const { encoder, tokenizer } = deps.codec;
    const keys = input.messages.map(canonicalKey);
    const toolsKey = toolsKeyOf(input.tools);
    const plan = planRequest(session.chains, input.messages, keys, toolsKey);
    const base = plan.kind === 'new' ? [] : plan.chain.tokens.slice(0, plan.baseTokens);
    let delta: number[];
    if (base.length === 0) delta = encoder.encodeFirst(plan.appended, input.tools);
    else {
      // A turn cut by max_tokens has no end-of-turn token; the template would have closed it.
      const close = base[base.length - 1] === encoder.endOfTurnId ? [] : [encoder.endOfTurnId];
      delta = [...close, ...encoder.encodeAppended(plan.appended, input.tools)];
    }
    const prompt = [...base, ...delta];
    const room = budgets.maxContextTokens - prompt.length;
    if (room <= 0) {
      session.terminationReason ??= 'context_length';
      return { kind: 'budget', reason: 'context_length', usage: { ...noUsage, promptTokens: prompt.length } };
    }

    const started = performance.now();
    const result = await deps.backendFor(homeInstance).generate({
      promptIds: prompt,
      maxTokens: Math.min(input.maxTokens ?? sampling.maxTokens, room),
      temperature: input.temperature ?? sampling.temperature,
      topP: input.topP ?? sampling.topP,
      signal: input.signal,
      onTokens: input.onTokens,
    });
    if (result.finishReason === 'abort') return { kind: 'aborted' };

    const sampledText = result.ids[result.ids.length - 1] === encoder.endOfTurnId ? result.ids.slice(0, -1) : result.ids;
    const parsed = deps.codec.parseTurn(tokenizer.decode(sampledText));
    const reply: AssistantMessage = { role: 'assistant', content: parsed.content };
    if (parsed.reasoning !== undefined) reply.reasoning_content = parsed.reasoning;
    if (parsed.toolCalls.length > 0) reply.tool_calls = parsed.toolCalls;

    const chain = plan.kind === 'new' ? undefined : plan.chain;
    const replaced = plan.kind === 'rollback' ? plan.chain.history[plan.chain.history.length - 1] : undefined;
    const replacedToolCalls = replaced?.role === 'assistant' ? (replaced.tool_calls?.length ?? 0) : 0;
    const chainIndex = chain?.index ?? session.chains.length;
    const liveAfter = (chain?.turns.length ?? 0) - (plan.kind === 'rollback' ? 1 : 0);
    deps.store.commitTurn(
      {
        sessionId: session.record.sessionId,
        chainIndex,
        seq: chain?.nextSeq ?? 0,
        turnIndex: liveAfter,
        promptDelta: delta,
        sampled: result.ids,
        logprobs: result.logprobs,
        finishReason: result.finishReason === 'length' ? 'length' : parsed.toolCalls.length > 0 ? 'tool_call' : 'stop',
        cachedTokens: result.cachedTokens,
        version: deps.policyVersion(),
        tLlmS: (performance.now() - started) / 1000,
        messagesJson: JSON.stringify(plan.appended),
        replyJson: JSON.stringify(reply),
        toolsJson: input.tools ? JSON.stringify(input.tools) : null,
        rolledBack: false,
      },
      plan.kind === 'rollback' ? plan.rolledBackSeq : undefined,
    );
    (chain ?? session.newChain(input.tools)).commit({
      baseTokens: base.length,
      baseHistory: plan.kind === 'new' ? 0 : plan.baseHistory,
      appended: plan.appended,
      delta,
      sampled: result.ids,
      reply,
      rolledBack: plan.kind === 'rollback',
    });
    if (plan.kind === 'rollback') session.rollbacks += 1;
    else session.liveTurns += 1;
    session.toolCalls += parsed.toolCalls.length - replacedToolCalls;

    return {
      kind: 'generated',
      parsed,
      reply,
      finishReason: result.finishReason === 'length' ? 'length' : parsed.toolCalls.length > 0 ? 'tool_calls' : 'stop',
      usage: { promptTokens: prompt.length, completionTokens: result.ids.length, cachedTokens: result.cachedTokens },
    };
  });
}
