import {
  Bool,
  Field,
  Float32,
  Float64,
  Int32,
  LargeUtf8,
  List,
  RecordBatchStreamWriter,
  Table,
  Uint8,
  Utf8,
  vectorFromArray,
  type DataType,
} from 'apache-arrow';
import type { TrajectoryRow } from './row.js';

const listOf = (type: DataType): List => new List(new Field('item', type, false));
/** Items are null for turns recorded before the value was kept. */
const listOfNullable = (type: DataType): List => new List(new Field('item', type, true));

/** Arrow types of the trajectory columns, in the order of the spec. */
export const TRAJECTORY_COLUMNS: { [K in keyof TrajectoryRow]: DataType } = {
  trajectory_id: new Utf8(),
  group_id: new Utf8(),
  task_id: new Utf8(),
  episode_id: new Utf8(),
  batch_id: new Utf8(),
  episode_index: new Int32(),
  chain_index: new Int32(),
  num_chains: new Int32(),
  is_final_chain: new Bool(),
  parent_chain_index: new Int32(),
  fork_offset: new Int32(),
  agent_name: new Utf8(),
  input_ids: listOf(new Int32()),
  prompt_length: new Int32(),
  loss_mask: listOf(new Uint8()),
  sampled_mask: listOf(new Uint8()),
  logprobs: listOf(new Float32()),
  token_version: listOf(new Int32()),
  min_version: new Int32(),
  max_version: new Int32(),
  turn_starts: listOf(new Int32()),
  turn_finish_reason: listOf(new Utf8()),
  turn_cached_tokens: listOf(new Int32()),
  // float64: the temperature exactly as requested, so a trainer's stated value matches it.
  turn_temperature: listOfNullable(new Float64()),
  turn_logprobs_mode: listOfNullable(new Utf8()),
  reward: new Float32(),
  reward_info: new Utf8(),
  finished: new Bool(),
  truncated: new Bool(),
  termination_reason: new Utf8(),
  num_turns: new Int32(),
  num_tool_calls: new Int32(),
  num_rollbacks: new Int32(),
  t_episode_s: new Float32(),
  t_llm_s: new Float32(),
  t_env_s: new Float32(),
  messages: new LargeUtf8(),
  template_drift_offset: new Int32(),
  num_drift_turns: new Int32(),
};

export function rowsToTable(rows: TrajectoryRow[]): Table {
  const columns = Object.fromEntries(
    (Object.keys(TRAJECTORY_COLUMNS) as (keyof TrajectoryRow)[]).map((name) => [
      name,
      vectorFromArray(
        rows.map((r) => r[name]),
        TRAJECTORY_COLUMNS[name],
      ),
    ]),
  );
  return new Table(columns);
}

/** Rows as the bytes of one Arrow IPC stream (pyarrow: `pa.ipc.open_stream(source).read_all()`). */
export function arrowStreamBytes(rows: TrajectoryRow[]): Uint8Array {
  return RecordBatchStreamWriter.writeAll(rowsToTable(rows)).toUint8Array(true);
}
