import { TaskCatalog } from '../../activities/task-catalog.js';
import { startEngineSim, type EngineSim } from '../../engine-sim/index.js';
import { createChatTemplate } from '../../gateway/codec/chat-template.js';
import { JsTokenizer } from '../../gateway/codec/js-tokenizer.js';
import { defaultModelDir, loadModelFiles } from '../../gateway/codec/model-files.js';
import type { InstanceConfig } from '../../scheduler/index.js';
import { scriptForTask } from '../../tasks/solution-script.js';
import { ConfigError, type Config } from '../config.js';

/** The simulated engines as the other roles reach them. */
export interface EnginesRole {
  instances: InstanceConfig[];
  stop(): Promise<void>;
}

/**
 * The engines a process that does not start them (a separate worker or gateway) should know: the
 * configured ones, else the simulated ones at their fixed ports.
 */
export function configuredInstances(config: Config): InstanceConfig[] {
  if (config.engines.length > 0) return config.engines;
  const sim = config.engineSim;
  return Array.from({ length: sim.instances }, (_, i) => ({
    name: `sim-${i}`,
    kind: 'vllm' as const,
    url: `http://127.0.0.1:${sim.basePort + i}`,
    kvCapacityTokens: sim.kvCapacityTokens,
  }));
}

/** Starts the simulated engines of `engineSim`, one per instance, on consecutive ports from `basePort`. */
export async function startEngines(
  config: Config,
  shared: { tasks?: TaskCatalog } = {},
): Promise<EnginesRole> {
  const sim = config.engineSim;
  const files = await loadModelFiles(config.model.dir ?? defaultModelDir());
  // engine-sim tokenizes synchronously, on its own loop: the pure-JS tokenizer.
  const tokenizer = new JsTokenizer(files);
  const chatTemplate = createChatTemplate(files, { enableThinking: config.model.enableThinking });
  const source = await (shared.tasks ?? new TaskCatalog()).load(sim.tasks);
  const script = {
    answers: sim.answers,
    tasks: [...source.values()].map(scriptForTask),
    wanderProbability: sim.wanderProbability,
  };
  const sims: EngineSim[] = [];
  const stop = async () => void (await Promise.all(sims.splice(0).map((s) => s.close())));
  try {
    for (let i = 0; i < sim.instances; i++) {
      sims.push(
        await startEngineSim({
          tokenizer,
          chatTemplate,
          script,
          port: sim.basePort === 0 ? 0 : sim.basePort + i,
          modelName: config.model.name,
          kvCapacityTokens: sim.kvCapacityTokens,
          timeScale: sim.timeScale,
          seed: sim.seed + i,
        }),
      );
    }
  } catch (error) {
    await stop();
    throw error;
  }
  const instances = configuredInstances(config).map((instance, i) => ({
    ...instance,
    url: sims[i]!.url,
  }));
  return { instances, stop };
}

/**
 * `rollout engines`: the simulated engines alone, where the other roles expect them
 * (`configuredInstances`), so only fixed ports and no real engines make sense.
 */
export function startStandaloneEngines(config: Config): Promise<EnginesRole> {
  if (config.engines.length > 0)
    throw new ConfigError(
      'rollout engines starts simulated engines, but `engines` lists real ones; leave `engines` empty',
    );
  if (config.engineSim.basePort === 0)
    throw new ConfigError(
      'rollout engines needs a fixed engineSim.basePort (not 0): the other roles find the engines there',
    );
  return startEngines(config);
}
