import type { SessionStore } from './store/index.js';

/**
 * A session's transcript as its chains hold it now: per chain (in index order), each live turn's
 * new messages then its reply, as the `messages` column writes them (assemble.ts). Readable while
 * the session is open, since committed turns are written through.
 */
export async function sessionTranscript(
  store: Pick<SessionStore, 'loadTurns'>,
  sessionId: string,
): Promise<unknown[]> {
  const turns = (await store.loadTurns(sessionId)).filter((t) => !t.rolledBack);
  turns.sort((a, b) => a.chainIndex - b.chainIndex || a.turnIndex - b.turnIndex);
  return turns.flatMap((t) => [
    ...(JSON.parse(t.messagesJson) as unknown[]),
    JSON.parse(t.replyJson) as unknown,
  ]);
}
