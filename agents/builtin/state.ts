import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';

const PendingCall = z.object({
  id: z.string(),
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  /** Set before the call runs, so a retry after a crash knows it may have had effects. */
  started: z.boolean(),
  result: z.string().optional(),
});

/** What the agent keeps between steps; on the worker's disk, never in Temporal payloads. */
export const AgentState = z.object({
  messages: z.array(z.record(z.string(), z.unknown())),
  pending: z.array(PendingCall),
  turns: z.number().int(),
  toolCalls: z.number().int(),
  envSeconds: z.number(),
  done: z.enum(['submitted', 'no_tool_call', 'budget']).optional(),
});
export type AgentState = z.infer<typeof AgentState>;

/** One JSON file per episode attempt, replaced atomically on every save. */
export class AgentStateFile {
  constructor(readonly file: string) {}

  static for(stateDir: string, episodeId: string, attempt: number): AgentStateFile {
    return new AgentStateFile(path.join(stateDir, `${encodeURIComponent(episodeId)}.a${attempt}.json`));
  }

  async load(): Promise<AgentState | undefined> {
    try {
      return AgentState.parse(JSON.parse(await readFile(this.file, 'utf8')));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  async save(state: AgentState): Promise<void> {
    await mkdir(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.tmp`;
    await writeFile(tmp, JSON.stringify(state));
    await rename(tmp, this.file);
  }
}

/** `<episode id, URI-encoded>.a<attempt>.json`, and its `.tmp` while it is being replaced. */
const STATE_FILE = /^(.+)\.a\d+\.json(\.tmp)?$/;

/** The episode a file of the state directory belongs to; undefined for a file that is no state file. */
export function episodeOfStateFile(name: string): string | undefined {
  const match = STATE_FILE.exec(name);
  if (!match) return undefined;
  try {
    return decodeURIComponent(match[1]!);
  } catch {
    return undefined;
  }
}

/** Deletes an attempt's state file; missing is fine (idempotent). */
export async function removeAgentState(stateDir: string, episodeId: string, attempt: number): Promise<void> {
  await rm(AgentStateFile.for(stateDir, episodeId, attempt).file, { force: true });
}
