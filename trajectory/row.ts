/** One trainer row per chain, exactly the columns of ../shared/specs/trajectory.md. */
export interface TrajectoryRow {
  trajectory_id: string;
  group_id: string;
  task_id: string;
  episode_id: string;
  batch_id: string;
  episode_index: number;
  chain_index: number;
  num_chains: number;
  is_final_chain: boolean;
  parent_chain_index: number | null;
  fork_offset: number | null;
  agent_name: string;
  input_ids: number[];
  prompt_length: number;
  loss_mask: number[];
  sampled_mask: number[];
  logprobs: number[];
  token_version: number[];
  min_version: number;
  max_version: number;
  turn_starts: number[];
  turn_finish_reason: string[];
  turn_cached_tokens: number[];
  /** Temperature each turn was sampled at; null for a turn recorded before it was kept. */
  turn_temperature: (number | null)[];
  /** What log-probs each turn's `logprobs` are: `raw` or `processed`; null for a turn recorded before it was kept. */
  turn_logprobs_mode: (string | null)[];
  reward: number;
  reward_info: string;
  finished: boolean;
  truncated: boolean;
  termination_reason: string;
  num_turns: number;
  num_tool_calls: number;
  num_rollbacks: number;
  t_episode_s: number;
  t_llm_s: number;
  t_env_s: number;
  messages: string | null;
  /** Beyond the spec: first token where a full template render of the history differs from input_ids (-1: none). */
  template_drift_offset: number;
  /** Beyond the spec: live turns sampled after that point. */
  num_drift_turns: number;
}
