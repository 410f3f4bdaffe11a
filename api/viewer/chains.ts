import { assembleEpisode, type EpisodeRecord, type SessionStore, type StoredTurn, type TrajectoryRow } from '../../trajectory/index.js';

/** One chain of an episode: its trainer row (the Arrow export's own derivation) and its turns. */
export interface ChainView {
  row: TrajectoryRow;
  /** Live turns, in the order the row lays them end to end. */
  live: StoredTurn[];
  /** Turns replaced by a rollback, each shown where it stood. */
  rolledBack: StoredTurn[];
  /** Token range of each live turn in `row.input_ids`: its prompt delta, then what it sampled from `sampledStart`. */
  spans: { start: number; sampledStart: number; end: number }[];
}

/**
 * Where each turn lies in the row: its sampled tokens start at `turn_starts[t]` and run while
 * `loss_mask` is 1 (never past the next turn's start); its prompt delta is what lies before them.
 */
function turnSpans(row: TrajectoryRow): ChainView['spans'] {
  const spans: ChainView['spans'] = [];
  let start = 0;
  row.turn_starts.forEach((sampledStart, t) => {
    const limit = row.turn_starts[t + 1] ?? row.input_ids.length;
    let end = sampledStart;
    while (end < limit && row.loss_mask[end] === 1) end++;
    spans.push({ start, sampledStart, end });
    start = end;
  });
  return spans;
}

/** The chains of an ended episode as the trainer receives them; none when it recorded no session. */
export async function episodeChains(store: Pick<SessionStore, 'loadTurns' | 'loadChainReports'>, episode: EpisodeRecord): Promise<ChainView[]> {
  if (!episode.sessionId) return [];
  const [turns, reports] = await Promise.all([store.loadTurns(episode.sessionId), store.loadChainReports(episode.sessionId)]);
  return assembleEpisode(episode, turns, reports).map((row) => {
    const ofChain = turns.filter((t) => t.chainIndex === row.chain_index);
    return { row, live: ofChain.filter((t) => !t.rolledBack), rolledBack: ofChain.filter((t) => t.rolledBack), spans: turnSpans(row) };
  });
}
