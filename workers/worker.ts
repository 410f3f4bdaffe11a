import {
  bundleWorkflowCode,
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
  type LogLevel,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { fileURLToPath } from 'node:url';
import type { Activities } from '../activities/index.js';
import { startJanitor, type JanitorHandle, type JanitorOptions } from './janitor.js';

export { hostQueueOf } from './host-queue.js';

export interface RolloutWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  /** The shared queue: workflows and activities that may run on any worker. */
  taskQueue: string;
  /** This host's queue: activities that touch its sandboxes. */
  hostQueue: string;
  activities: Activities;
  /** Pre-built workflow bundle; built from `workflows/` when absent. */
  workflowBundle?: WorkflowBundleWithSourceMap;
  maxConcurrentActivities: number;
  maxConcurrentWorkflowTasks: number;
  /** Sweeps this host now, registers it and joins the janitor schedule (`workers/janitor.ts`). Default: off. */
  janitor?: JanitorOptions;
}

let runtimeInstalled = false;

/**
 * Sets the Temporal SDK's log level for this process (once, before the first worker). The SDK's
 * default INFO level prints every worker state change, which buries the CLI's own output.
 */
export function installWorkerRuntime(level: LogLevel = 'WARN'): void {
  if (runtimeInstalled) return;
  Runtime.install({ logger: new DefaultLogger(level) });
  runtimeInstalled = true;
}

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export function bundleWorkflows(): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quietBundlerLogger });
}

const quietBundlerLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => console.warn(message),
  error: (message: string) => console.error(message),
};

/**
 * A rollout worker: one Temporal worker on the shared queue (workflows, control activities,
 * sandbox creation) and one on its host queue (agent steps, reward, destroy).
 */
export class RolloutWorker {
  private constructor(
    private readonly workers: Worker[],
    private readonly janitor: JanitorHandle | undefined,
  ) {}

  static async create(options: RolloutWorkerOptions): Promise<RolloutWorker> {
    const janitor = options.janitor && (await startJanitor(options.connection, options.namespace, { taskQueue: options.taskQueue, hostQueue: options.hostQueue }, options.janitor));
    try {
      return new RolloutWorker(await RolloutWorker.createWorkers(options), janitor);
    } catch (error) {
      janitor?.stop();
      throw error;
    }
  }

  private static async createWorkers(options: RolloutWorkerOptions): Promise<Worker[]> {
    const workflowBundle = options.workflowBundle ?? (await bundleWorkflows());
    const shared = await Worker.create({
      connection: options.connection,
      namespace: options.namespace,
      taskQueue: options.taskQueue,
      workflowBundle,
      activities: options.activities,
      maxConcurrentActivityTaskExecutions: options.maxConcurrentActivities,
      maxConcurrentWorkflowTaskExecutions: options.maxConcurrentWorkflowTasks,
    });
    const host = await Worker.create({
      connection: options.connection,
      namespace: options.namespace,
      taskQueue: options.hostQueue,
      activities: options.activities,
      maxConcurrentActivityTaskExecutions: options.maxConcurrentActivities,
    });
    return [shared, host];
  }

  /** Runs until `shutdown()`; rejects if a worker fails. */
  run(): Promise<void> {
    return Promise.all(this.workers.map((w) => w.run())).then(() => undefined);
  }

  shutdown(): void {
    this.janitor?.stop();
    for (const w of this.workers) if (w.getState() === 'RUNNING') w.shutdown();
  }
}
