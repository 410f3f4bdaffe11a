import { openArtifactStore, type ArtifactStore } from '../trajectory/index.js';
import type { Config } from './config.js';
import { dataPaths } from './paths.js';

/** The artifact store of the configuration: `artifacts.uri`, else `<dataDir>/batches`. */
export function openConfiguredArtifacts(config: Config): ArtifactStore {
  return openArtifactStore(config.artifacts.uri ?? dataPaths(config.dataDir).exports, { s3: config.artifacts.s3 });
}
