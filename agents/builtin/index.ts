export { runAgentStep, AgentProtocolError, type AgentStepDeps, type AgentStepInput, type AgentStepResult } from './step.js';
export { BUILTIN_TOOLS, SYSTEM_PROMPT } from './tools.js';
export { episodeOfStateFile, removeAgentState } from './state.js';
