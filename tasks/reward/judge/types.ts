/**
 * What a model judge needs from the worker and what it leaves behind. The engine side lives
 * outside tasks/ (activities/judge-engine.ts): tasks only sees this interface.
 */

/** One message of a judge prompt. */
export interface JudgeMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface JudgeCallRequest {
  messages: JudgeMessage[];
  /** The model asked for; undefined = the served model. */
  model?: string;
  maxTokens: number;
  temperature: number;
}

/** One answer of the engine, with the counts the engine reported. */
export interface JudgeCallResult {
  model: string;
  /** The engine instance (its configured name) that answered. */
  instance: string;
  /** The answer without its reasoning: what the verdict is parsed from. */
  text: string;
  /** Reasoning the model wrote before the answer, if any. */
  reasoning: string;
  finishReason: string;
  promptIds: number[];
  ids: number[];
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  /** Wall time of the engine request, ms. */
  engineMs: number;
}

/** The configured engines, as a judge reaches them. */
export interface JudgeEngine {
  /** Throws JudgeUnavailableError when no engine answered, JudgeConfigError for a model none serves. */
  complete(request: JudgeCallRequest): Promise<JudgeCallResult>;
}

/** Price per token of a judge's calls, in whatever unit the operator bills in. Default 0 each. */
export interface JudgePrices {
  promptToken: number;
  completionToken: number;
}

/** Where judge records go: the artifact store (only `put` is needed). */
export interface JudgeRecordSink {
  put(key: string, bytes: Uint8Array): Promise<{ uri: string }>;
}

/** What the reward needs to run a judge: the worker builds it (activities/index.ts). */
export interface JudgeDeps {
  engine: JudgeEngine;
  records: JudgeRecordSink;
  prices: JudgePrices;
  /** The episode's transcript (its gateway session's messages, in order); empty when none was recorded. */
  transcript(): Promise<unknown[]>;
}

/** A judge's verdict, as parsed from its answer. */
export type JudgeVerdict = { score: number; reason: string } | { flagged: boolean; reason: string };

/**
 * What a reward keeps of a judge (RewardResult.judge): counts, cost, the verdict and where the
 * full record (prompts, answers, token ids) is. Small: it travels through Temporal.
 */
export interface JudgeSummary {
  /** `reward`: the task's judge reward; `audit`: the audit beside a tests or script reward. */
  role: 'reward' | 'audit';
  model: string;
  instance: string;
  /** Engine calls made: 1, or 2 after an unparseable first answer. */
  calls: number;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  engineMs: number;
  /** promptTokens × price per prompt token + completionTokens × price per completion token. */
  cost: number;
  /** null: the judge answered twice, neither parseable. */
  verdict: JudgeVerdict | null;
  /** The artifact holding the prompts, raw answers and token ids. */
  recordUri: string;
}

/** No configured engine answered the judge: machinery failure, the reward activity is retried. */
export class JudgeUnavailableError extends Error {
  override name = 'JudgeUnavailableError';
}

/** The task asks for a judge the stack cannot run (a model no engine serves): never retried. */
export class JudgeConfigError extends Error {
  override name = 'JudgeConfigError';
}
