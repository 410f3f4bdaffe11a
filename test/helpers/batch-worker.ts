import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Worker } from '@temporalio/worker';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { installWorkerRuntime } from '../../workers/worker.js';

/** A worker running the batch workflow over test episode workflows, and a client of the same server. */
export interface BatchTestWorker {
  client: Client;
  stop(): Promise<void>;
}

/**
 * Bundles `workflowsFile` (a file under test/api that exports the batch workflow with its test
 * episodes), runs it on `taskQueue` of the run's Temporal server with `activities`, and connects a
 * client.
 */
export async function startBatchTestWorker(options: {
  workflowsFile: string;
  taskQueue: string;
  activities: object;
}): Promise<BatchTestWorker> {
  installWorkerRuntime();
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: path.join(
      path.dirname(fileURLToPath(import.meta.url)),
      '..',
      'api',
      options.workflowsFile,
    ),
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
  });
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: inject('temporalAddress') }),
    taskQueue: options.taskQueue,
    workflowBundle,
    activities: options.activities,
  });
  const running = worker.run();
  const connection = await Connection.connect({ address: inject('temporalAddress') });
  return {
    client: new Client({ connection }),
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}
