import { parseArgs } from 'node:util';

/** Flags every command accepts, mapped to configuration keys. */
const CONFIG_FLAGS = {
  'temporal-address': 'temporal.address',
  'store-url': 'store.url',
  'gateway-url': 'gateway.url',
  'gateway-port': 'gateway.port',
  'api-port': 'api.port',
  'data-dir': 'dataDir',
  'model-dir': 'model.dir',
  concurrency: 'batch.concurrency',
  'host-id': 'worker.hostId',
  'sandbox-failure-rate': 'sandbox.createFailureRate',
  'time-scale': 'engineSim.timeScale',
} as const;
const NUMERIC = new Set(['gateway.port', 'api.port', 'batch.concurrency', 'sandbox.createFailureRate', 'engineSim.timeScale']);

export class UsageError extends Error {
  override name = 'UsageError';
}

export interface ParsedArgs {
  positionals: string[];
  config: string | undefined;
  overrides: Record<string, unknown>;
  tasks: string | undefined;
  n: number | undefined;
  agent: string | undefined;
  out: string | undefined;
  id: string | undefined;
  /** `tasks check`: the source's format (default: its prefix, else detected). */
  format: string | undefined;
  /** `tasks check`: SWE-bench/SWE-Gym test command for repositories without a default. */
  testCmd: string | undefined;
  /** `tasks check`: the log parser of `testCmd`. */
  logParser: string | undefined;
  wait: boolean;
  /** `demo`, `batch start --wait`: off a terminal, a progress line at least this often (seconds, default 10). */
  progressEvery: number;
  help: boolean;
}

/** Default of `--progress-every`. */
export const DEFAULT_PROGRESS_EVERY_S = 10;

function toNumber(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n)) throw new UsageError(`--${flag} needs a number, got ${JSON.stringify(value)}`);
  return n;
}

export function parseCliArgs(argv: string[]): ParsedArgs {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        config: { type: 'string', short: 'c' },
        tasks: { type: 'string' },
        n: { type: 'string' },
        agent: { type: 'string' },
        out: { type: 'string' },
        id: { type: 'string' },
        format: { type: 'string' },
        'test-cmd': { type: 'string' },
        'log-parser': { type: 'string' },
        wait: { type: 'boolean', default: false },
        'progress-every': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
        ...Object.fromEntries(Object.keys(CONFIG_FLAGS).map((f) => [f, { type: 'string' as const }])),
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const overrides: Record<string, unknown> = {};
  for (const [flag, key] of Object.entries(CONFIG_FLAGS)) {
    const value = values[flag];
    if (typeof value === 'string') overrides[key] = NUMERIC.has(key) ? toNumber(flag, value) : value;
  }
  const n = typeof values.n === 'string' ? toNumber('n', values.n) : undefined;
  if (n !== undefined && (!Number.isInteger(n) || n < 1)) throw new UsageError('--n must be a positive integer');
  const progressEvery = typeof values['progress-every'] === 'string' ? toNumber('progress-every', values['progress-every']) : DEFAULT_PROGRESS_EVERY_S;
  if (progressEvery <= 0 || progressEvery > 86_400) throw new UsageError('--progress-every must be a number of seconds in (0, 86400]');
  return {
    positionals: parsed.positionals,
    config: values.config as string | undefined,
    overrides,
    tasks: values.tasks as string | undefined,
    n,
    agent: values.agent as string | undefined,
    out: values.out as string | undefined,
    id: values.id as string | undefined,
    format: values.format as string | undefined,
    testCmd: values['test-cmd'] as string | undefined,
    logParser: values['log-parser'] as string | undefined,
    wait: values.wait === true,
    progressEvery,
    help: values.help === true,
  };
}

export const USAGE = `usage: rollout <command> [flags]

commands:
  demo                     start the embedded stack, run the built-in tasks x 4 samples, print a summary
  dev                      start the embedded stack (Temporal dev server, engines, gateway, worker) and wait
  gateway                  run the gateway alone (store.url, engines or engineSim.basePort)
  api                      run the batch API alone (needs --temporal-address, --gateway-url)
  worker                   run a worker that joins a running stack (needs --temporal-address, --gateway-url)
  placement                run the placement service the gateway replicas route through (gateway.placementPort)
  engines                  run the simulated engines alone, on engineSim.basePort + i
  batch start              start a batch (--tasks builtin|DIR|FILE, --n N, --agent builtin, --id ID, --wait)
  batch status ID          print a batch's progress, or its manifest when finished
  batch export ID --out F  write a finished batch's trajectories to F (Arrow IPC stream)
  tasks check SOURCE       load a task source and run its load-time checks; print a summary, exit 1 on failures
                           (--format auto|agent-rollout|swe-bench|swe-rebench|swe-gym|r2e-gym|harbor,
                           --test-cmd CMD --log-parser P for SWE-bench repositories without a default)

flags:
  -c, --config FILE        configuration file (YAML or JSON; see README)
  --store-url URL          store: postgres://... (many machines) or a SQLite file (default <data-dir>/trajectories.sqlite)
  --temporal-address A     Temporal front end host:port (default: the embedded dev server)
  --gateway-url URL        gateway base URL (worker)
  --gateway-port P         gateway port
  --api-port P             batch API port (0: any free port)
  --data-dir DIR           data directory (default .data)
  --model-dir DIR          tokenizer and chat template directory
  --concurrency N          episodes running at once per batch
  --host-id ID             this worker's host name for its sandbox queue
  --sandbox-failure-rate R inject sandbox creation failures (0..1), for testing
  --time-scale S           simulated engine speed (0.05 = 20x faster than a real GPU)
  --progress-every S       demo, batch start --wait: when the output is not a terminal, a progress line
                           on every episode ended and at least every S seconds (default ${DEFAULT_PROGRESS_EVERY_S})`;
