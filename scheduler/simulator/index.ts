export { computeBounds, type Bounds } from './bounds.js';
export { SimInstance, type EngineOptions, type SimRequest } from './engine.js';
export { PRESETS, type ModelPreset } from './presets.js';
export { simulate, type SimulationOptions, type SimulationResult } from './simulator.js';
export { agentBatch, loadMooncake, type AgentBatchOptions, type Episode, type MooncakeOptions, type TurnSpec, type Workload } from './workload.js';
