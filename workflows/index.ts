export { episodeWorkflow } from './episode.js';
export { batchWorkflow } from './batch.js';
export { janitorWorkflow } from './janitor.js';
