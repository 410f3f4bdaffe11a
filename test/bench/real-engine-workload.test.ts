import { describe, expect, it } from 'vitest';
import { materialise, simulatorWorkload, WORDS } from '../../bench/routing/real-engine-workload.js';
import { agentBatch } from '../../scheduler/simulator/index.js';
import { testEngineTokenizer } from '../helpers/stack.js';

const batch = agentBatch({ seed: 3, tasks: 2, samplesPerTask: 3, blockSize: 128, taskPromptTokens: 1000, minTurns: 3, maxTurns: 5, finalContextTokens: [2000, 2600], outputTokens: 32 });

describe('real-engine workload', () => {
  it('materialises every text with exactly the tokens the workload promises (Qwen3 tokenizer)', async () => {
    const tokenizer = await testEngineTokenizer();
    for (const word of WORDS) expect(tokenizer.encode(` ${word}`), word).toHaveLength(1);
    const script = materialise(batch, 3);
    expect(script).toHaveLength(6);
    for (const [e, ep] of script.entries()) {
      const turns = batch.episodes[e]!.turns;
      expect(tokenizer.encode(ep.taskText)).toHaveLength(turns[0]!.promptTokens);
      expect(ep.observations).toHaveLength(turns.length - 1);
      ep.observations.forEach((o, k) => expect(tokenizer.encode(o)).toHaveLength(turns[k + 1]!.promptTokens - turns[k]!.promptTokens - turns[k]!.outputTokens));
      expect(ep.maxTokens).toEqual(turns.map((t) => t.outputTokens));
      expect(ep.delays).toEqual(batch.episodes[e]!.delays);
    }
    // Siblings share the task text, other tasks do not; observations are the episode's own.
    expect(script[1]!.taskText).toBe(script[0]!.taskText);
    expect(script[3]!.taskText).not.toBe(script[0]!.taskText);
    expect(script[1]!.observations[0]).not.toBe(script[0]!.observations[0]);
    expect(materialise(batch, 3)).toEqual(script);
  });

  it('turns recorded token ids into blocks shared exactly where the tokens are', () => {
    const task = Array.from({ length: 300 }, (_, i) => i + 1);
    const own = (seed: number, n: number) => Array.from({ length: n }, (_, i) => 10_000 * seed + i);
    const first = [...task, ...own(1, 10)];
    const workload = simulatorWorkload(
      [
        { chainId: 'a', turns: [{ prompt: first, output: own(2, 40) }, { prompt: [...first, ...own(2, 40), ...own(3, 200)], output: own(4, 5) }], delays: [0.5] },
        { chainId: 'b', turns: [{ prompt: [...task, ...own(5, 10)], output: own(6, 3) }], delays: [] },
      ],
      128,
      'test',
    );
    const [a0, a1] = workload.episodes[0]!.turns;
    const [b0] = workload.episodes[1]!.turns;
    expect(a0).toMatchObject({ promptTokens: 310, outputTokens: 40, promptBlocks: 2, kvBlocks: 2, sharedTokens: 256 });
    expect(a1).toMatchObject({ promptTokens: 550, outputTokens: 5, promptBlocks: 4, kvBlocks: 4, sharedTokens: 256 });
    // The second turn extends the first: its leading blocks are the first's (prompt and output).
    expect(a1!.seq.slice(0, 2)).toEqual(a0!.seq.slice(0, 2));
    // The sibling shares the two task-only blocks, and not the third (its own tokens start at 300).
    expect(b0!.seq.slice(0, 2)).toEqual(a0!.seq.slice(0, 2));
    expect(a1!.seq[2]).not.toBe(undefined);
    expect(workload.episodes[0]!.delays).toEqual([0.5]);
    expect(workload).toMatchObject({ kind: 'closed', blockSize: 128 });
  });
});
