/** What a black-box agent preset says about running one agent program in a sandbox. */

/** What a preset needs to know about one run. */
export interface AgentRunContext {
  /** The gateway as the agent sees it, e.g. `http://127.0.0.1:18080` (no `/v1`). */
  baseUrl: string;
  /** The gateway session key, handed to the agent as its API key. */
  apiKey: string;
  /** The model name the agent asks for; the gateway serves its one policy whatever the name. */
  model: string;
  /** The task: the problem statement. */
  prompt: string;
  /**
   * `limits.maxContextTokens`: the gateway refuses a prompt longer than this, so agents that know
   * their context window are told it, and compact before they reach it.
   */
  maxContextTokens: number;
}

/** A file written into the sandbox before the agent starts. */
export interface AgentConfigFile {
  /** Absolute path inside the sandbox (under `/tmp`, the agent's HOME). */
  path: string;
  content: string;
}

export interface AgentPreset {
  readonly name: string;
  /** The agent's argv inside the sandbox. */
  command(ctx: AgentRunContext): string[];
  /** Where the agent starts. Default `/workspace`. */
  cwd?: string;
  env(ctx: AgentRunContext): Record<string, string>;
  configFiles(ctx: AgentRunContext): AgentConfigFile[];
  /** Wall time of a run when the caller gives none. */
  defaultTimeoutMs: number;
  /**
   * A file the agent leaves behind that `turns` reads (e.g. a trajectory), as a sandbox path;
   * absent when stdout alone says enough.
   */
  resultFile?: string;
  /** Model calls of the run as the agent itself reports them, if it does. */
  turns(output: { stdout: string; resultFile?: string }): number | undefined;
}

/**
 * What every preset's environment starts from: HOME is the sandbox's private, persistent `/tmp`.
 * No PATH: the image's own (its interpreters, e.g. a conda env) applies to the agent's commands.
 */
export const BASE_ENV: Record<string, string> = {
  HOME: '/tmp',
  LANG: 'C.UTF-8',
  TERM: 'dumb',
  NO_COLOR: '1',
};
