/**
 * A test gateway replica as its own process (spawnGateway): argv[2] is its JSON options. It prints
 * `listening <url>` once it serves, and runs until killed.
 */
import { loadCodec } from '../../gateway/codec/index.js';
import { buildGateway, type EngineInstance, type GatewayOptions } from '../../gateway/server.js';
import { SqliteStore } from '../../trajectory/index.js';

const options = JSON.parse(process.argv[2]!) as { storeFile: string; engines: EngineInstance[]; adminToken: string; replica: GatewayOptions['replica'] };
const gateway = await buildGateway({
  codec: await loadCodec(),
  store: SqliteStore.open(options.storeFile),
  engines: options.engines,
  modelName: 'Qwen/Qwen3-8B',
  adminToken: options.adminToken,
  replica: options.replica,
});
const url = await gateway.listen({ host: '127.0.0.1', port: 0 });
console.log(`listening ${url}`);
