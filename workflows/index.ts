export { episodeWorkflow } from './episode.js';
export { batchWorkflow } from './batch.js';
