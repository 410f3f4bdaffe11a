import type { ChainReport, EpisodeRecord, StoredTurn } from './store/index.js';
import type { TrajectoryRow } from './row.js';

interface ReplyShape {
  tool_calls?: unknown[];
}

/**
 * Builds the trainer rows of one episode from its committed turns. A chain's tokens are its live
 * (not rolled-back) turns laid end to end: each turn's prompt delta was encoded against exactly
 * the tokens before it, so concatenation reproduces what the engine saw.
 */
export function assembleEpisode(episode: EpisodeRecord, turns: StoredTurn[], reports: ChainReport[] = []): TrajectoryRow[] {
  const chains = new Map<number, StoredTurn[]>();
  for (const turn of turns) {
    const list = chains.get(turn.chainIndex) ?? [];
    list.push(turn);
    chains.set(turn.chainIndex, list);
  }
  const liveCounts = [...chains].map(([index, list]) => [index, list.filter((t) => !t.rolledBack).length] as const);
  // The agent's main loop is the chain with the most turns; side chains (titles, sub-agents) are shorter.
  const finalChain = liveCounts.reduce((best, cur) => (cur[1] > best[1] ? cur : best), [-1, -1] as const)[0];

  const rows: TrajectoryRow[] = [];
  for (const [chainIndex, chainTurns] of [...chains].sort(([a], [b]) => a - b)) {
    const live = chainTurns.filter((t) => !t.rolledBack);
    if (live.length === 0) continue;
    const report = reports.find((r) => r.chainIndex === chainIndex);
    rows.push(buildRow(episode, chainIndex, chainIndex === finalChain, chainTurns, live, report));
  }
  return rows.map((row) => ({ ...row, num_chains: rows.length }));
}

function buildRow(
  episode: EpisodeRecord,
  chainIndex: number,
  isFinal: boolean,
  all: StoredTurn[],
  live: StoredTurn[],
  report: ChainReport | undefined,
): TrajectoryRow {
  const inputIds: number[] = [];
  const sampledMask: number[] = [];
  const logprobs: number[] = [];
  const tokenVersion: number[] = [];
  const turnStarts: number[] = [];
  const transcript: unknown[] = [];
  let numToolCalls = 0;
  for (const turn of live) {
    for (const id of turn.promptDelta) {
      inputIds.push(id);
      sampledMask.push(0);
      logprobs.push(0);
      tokenVersion.push(-1);
    }
    turnStarts.push(inputIds.length);
    turn.sampled.forEach((id, i) => {
      inputIds.push(id);
      sampledMask.push(1);
      logprobs.push(turn.logprobs[i] ?? 0);
      tokenVersion.push(turn.sampledVersions[i] ?? turn.version);
    });
    const reply = JSON.parse(turn.replyJson) as ReplyShape;
    numToolCalls += reply.tool_calls?.length ?? 0;
    transcript.push(...(JSON.parse(turn.messagesJson) as unknown[]), reply);
  }
  const versions = tokenVersion.filter((v, i) => sampledMask[i] === 1);
  const finishReasons = live.map((t) => t.finishReason);
  const groupId = episode.groupId;
  return {
    trajectory_id: `${groupId}_${episode.episodeIndex}_${chainIndex}`,
    group_id: groupId,
    task_id: episode.taskId,
    episode_id: episode.episodeId,
    batch_id: episode.batchId,
    episode_index: episode.episodeIndex,
    chain_index: chainIndex,
    num_chains: 0,
    is_final_chain: isFinal,
    parent_chain_index: null,
    fork_offset: null,
    agent_name: episode.agentName,
    input_ids: inputIds,
    prompt_length: live[0]?.promptDelta.length ?? 0,
    loss_mask: [...sampledMask],
    sampled_mask: sampledMask,
    logprobs,
    token_version: tokenVersion,
    // Over sampled tokens; -1 (as in token_version) when the chain sampled none.
    min_version: versions.length > 0 ? versions.reduce((a, b) => Math.min(a, b)) : -1,
    max_version: versions.length > 0 ? versions.reduce((a, b) => Math.max(a, b)) : -1,
    turn_starts: turnStarts,
    turn_finish_reason: finishReasons,
    turn_cached_tokens: live.map((t) => t.cachedTokens),
    turn_temperature: live.map((t) => t.temperature),
    turn_logprobs_mode: live.map((t) => t.logprobsMode),
    reward: episode.reward ?? 0,
    reward_info: JSON.stringify(episode.rewardInfo),
    finished: episode.terminationReason === 'stop',
    truncated: episode.terminationReason === 'context_length' || finishReasons.includes('length'),
    termination_reason: episode.terminationReason,
    num_turns: live.length,
    num_tool_calls: numToolCalls,
    num_rollbacks: all.length - live.length,
    t_episode_s: episode.tEpisodeS,
    t_llm_s: live.reduce((sum, t) => sum + t.tLlmS, 0),
    t_env_s: episode.tEnvS,
    messages: JSON.stringify(transcript),
    template_drift_offset: report?.driftOffset ?? -1,
    num_drift_turns: report?.driftTurns ?? 0,
  };
}
