import { Client, Connection, ServiceError } from '@temporalio/client';
import { describe, expect, inject, it } from 'vitest';
import { followBatch } from '../../stack/batches.js';
import type { batchWorkflow } from '../../workflows/batch.js';

describe('followBatch', () => {
  // A timed-out test attempt once left its follow long-polling while the next attempt closed the
  // connection; the poll failed later, was retried on the closed channel, and threw from a timer.
  it('cancels its gRPC calls when its signal is aborted, and rejects', async () => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const client = new Client({ connection });
      // Nobody polls this queue: the batch never ends, so the follow long-polls its result.
      const handle = await client.workflow.start<typeof batchWorkflow>('batchWorkflow', {
        taskQueue: `nobody-${Date.now()}`,
        workflowId: `follow-abort-${Date.now()}`,
        args: [{} as Parameters<typeof batchWorkflow>[0]],
      });
      const abort = new AbortController();
      const follow = followBatch(handle, () => undefined, 100, abort.signal);
      setTimeout(() => abort.abort(), 300);
      const error = await follow.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ServiceError);
      // gRPC's CANCELLED: the call was cancelled on the client, not failed (a failure would be retried).
      expect((error as ServiceError).cause).toMatchObject({ code: 1 });
      await handle.terminate('test over');
    } finally {
      await connection.close();
    }
  });
});
