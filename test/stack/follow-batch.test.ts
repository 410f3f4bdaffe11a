import { getEventListeners } from 'node:events';
import { Client, Connection, ServiceError } from '@temporalio/client';
import { describe, expect, inject, it } from 'vitest';
import { followBatch, queryProgress } from '../../stack/batches.js';
import type { batchWorkflow } from '../../workflows/batch.js';

/** A batch workflow on a task queue nobody polls: it never runs, never ends, and answers no query. */
async function startUnpolledBatch(client: Client, name: string) {
  return client.workflow.start<typeof batchWorkflow>('batchWorkflow', {
    taskQueue: `nobody-${Date.now()}`,
    workflowId: `${name}-${Date.now()}`,
    args: [{} as Parameters<typeof batchWorkflow>[0]],
  });
}

describe('followBatch', () => {
  // A timed-out test attempt once left its follow long-polling while the next attempt closed the
  // connection; the poll failed later, was retried on the closed channel, and threw from a timer.
  it('cancels its gRPC calls when its signal is aborted, and rejects', async () => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const client = new Client({ connection });
      // The batch never ends, so the follow long-polls its result.
      const handle = await startUnpolledBatch(client, 'follow-abort');
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

  it('leaves no listener on the caller\'s signal after its queries, however many it makes', async () => {
    const connection = await Connection.connect({ address: inject('temporalAddress') });
    try {
      const handle = await startUnpolledBatch(new Client({ connection }), 'query-listeners');
      const abort = new AbortController();
      // More queries than the 10 listeners Node warns at; each one times out (no worker answers).
      for (let i = 0; i < 12; i++) {
        const answer = queryProgress(handle, 50, abort.signal);
        expect(getEventListeners(abort.signal, 'abort')).toHaveLength(1);
        expect(await answer).toBeUndefined();
      }
      expect(getEventListeners(abort.signal, 'abort')).toHaveLength(0);
      await handle.terminate('test over');
    } finally {
      await connection.close();
    }
  });
});
