/**
 * mini-swe-agent (PyPI `mini-swe-agent`, v2): a Python agent with one `bash` tool, reaching the
 * model through litellm as an OpenAI-compatible provider (`openai/<model>` with `api_base`). It
 * finishes when a command's output starts with `COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`.
 */
import { stringify } from 'yaml';
import { z } from 'zod';
import { AGENTS_SANDBOX_DIR } from './sidecar.js';
import { BASE_ENV, type AgentPreset, type AgentRunContext } from './types.js';

const CONFIG_DIR = '/tmp/.mini-swe-agent';
const TRAJECTORY = `${CONFIG_DIR}/trajectory.json`;

/** The part of mini-swe-agent's trajectory file we read. */
const Trajectory = z.object({
  info: z.object({ model_stats: z.object({ api_calls: z.number().int() }) }),
});

function overrides(ctx: AgentRunContext): string {
  return stringify({
    agent: {
      mode: 'yolo',
      confirm_exit: false,
      step_limit: 100,
      cost_limit: 0,
      output_path: TRAJECTORY,
    },
    environment: { environment_class: 'local', cwd: '/workspace', timeout: 120 },
    model: {
      model_class: 'litellm',
      model_name: `openai/${ctx.model}`,
      // Local models have no price: cost tracking would stop the run.
      cost_tracking: 'ignore_errors',
      model_kwargs: { api_base: `${ctx.baseUrl}/v1`, api_key: ctx.apiKey, drop_params: true },
    },
  });
}

export const miniSweAgent: AgentPreset = {
  name: 'mini-swe-agent',
  // From /tmp, so `-c mini.yaml` resolves to the packaged config and never to a file in the task repo.
  cwd: '/tmp',
  command: (ctx) => [
    `${AGENTS_SANDBOX_DIR}/venv/bin/python`,
    '-m',
    'minisweagent.run.mini',
    '--yolo',
    '--exit-immediately',
    '-c',
    'mini.yaml',
    '-c',
    `${CONFIG_DIR}/rollout.yaml`,
    '-o',
    TRAJECTORY,
    '-t',
    ctx.prompt,
  ],
  env: (ctx) => ({
    ...BASE_ENV,
    OPENAI_API_KEY: ctx.apiKey,
    MSWEA_CONFIGURED: 'true', // no first-run setup prompt
    MSWEA_GLOBAL_CONFIG_DIR: CONFIG_DIR,
    MSWEA_COST_TRACKING: 'ignore_errors',
    // litellm fetches its price list from the internet at import unless told to use its own copy.
    LITELLM_LOCAL_MODEL_COST_MAP: 'True',
    PYTHONDONTWRITEBYTECODE: '1',
    PYTHONUNBUFFERED: '1',
  }),
  configFiles: (ctx) => [{ path: `${CONFIG_DIR}/rollout.yaml`, content: overrides(ctx) }],
  defaultTimeoutMs: 30 * 60_000,
  resultFile: TRAJECTORY,
  turns: ({ resultFile }) => {
    if (resultFile === undefined) return undefined;
    try {
      return Trajectory.parse(JSON.parse(resultFile)).info.model_stats.api_calls;
    } catch {
      return undefined; // a run killed mid-write leaves no readable trajectory
    }
  },
};
