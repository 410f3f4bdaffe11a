export * from './store/index.js';
export type { TrajectoryRow } from './row.js';
export { assembleEpisode } from './assemble.js';
export { arrowStreamBytes, rowsToTable, TRAJECTORY_COLUMNS } from './arrow-export.js';
export { exportGroup, groupKey, GroupExportError, type GroupFile } from './group-export.js';
export * from './artifacts/index.js';
export { episodeRows } from './batch-export.js';
export { sessionTranscript } from './transcript.js';
