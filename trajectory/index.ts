export * from './store/index.js';
export type { TrajectoryRow } from './row.js';
export { assembleEpisode } from './assemble.js';
export { rowsToTable, writeArrowStream, TRAJECTORY_COLUMNS, type ExportedFile } from './arrow-export.js';
export { episodeRows } from './batch-export.js';
