/**
 * Runs a simulated engine (vLLM's and SGLang's APIs) from the command line:
 *   node --import tsx engine-sim/main.ts --port 8100 --script file.json [--time-scale 0.05]
 * Options (defaults in brackets): --host [127.0.0.1], --port [0 = any free], --script [none: every
 * answer is "Done."], --preset 8b|32b [8b], --model [Qwen/Qwen3-8B], --kv-capacity tokens [preset],
 * --block-size [16], --max-batch-tokens [8192], --time-scale [1], --seed [0],
 * --sglang-incremental-streaming [off: SGLang stream chunks repeat all output so far],
 * --weight-version [default].
 */
import { parseArgs } from 'node:util';
import { loadJsTokenizer } from '../gateway/codec/js-tokenizer.js';
import { ENGINE_PRESETS, loadPolicyScript, startEngineSim } from './index.js';

const { values } = parseArgs({
  options: {
    host: { type: 'string' },
    port: { type: 'string' },
    script: { type: 'string' },
    preset: { type: 'string', default: '8b' },
    model: { type: 'string' },
    'kv-capacity': { type: 'string' },
    'block-size': { type: 'string' },
    'max-batch-tokens': { type: 'string' },
    'time-scale': { type: 'string' },
    seed: { type: 'string' },
    'sglang-incremental-streaming': { type: 'boolean' },
    'weight-version': { type: 'string' },
  },
  strict: true,
});

function num(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n))
    throw new Error(`--${name} must be a number, got ${JSON.stringify(value)}`);
  return n;
}

if (!(values.preset in ENGINE_PRESETS)) {
  throw new Error(`--preset must be one of ${Object.keys(ENGINE_PRESETS).join(', ')}`);
}
const preset = ENGINE_PRESETS[values.preset as keyof typeof ENGINE_PRESETS];
const tokenizer = await loadJsTokenizer();
const sim = await startEngineSim({
  tokenizer,
  script: values.script ? await loadPolicyScript(values.script) : undefined,
  host: values.host,
  port: num('port', values.port),
  modelName: values.model,
  kvCapacityTokens: num('kv-capacity', values['kv-capacity']) ?? preset.kvCapacityTokens,
  blockSize: num('block-size', values['block-size']),
  maxBatchTokens: num('max-batch-tokens', values['max-batch-tokens']),
  timeModel: preset.timeModel,
  timeScale: num('time-scale', values['time-scale']),
  seed: num('seed', values.seed),
  sglangIncrementalStreaming: values['sglang-incremental-streaming'],
  weightVersion: values['weight-version'],
});
console.log(sim.url);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void sim.close().then(() => process.exit(0)));
}
