import { afterEach, describe, expect, it } from 'vitest';
import type { ChatMessage, ToolSpec } from '../../gateway/codec/index.js';
import { inlineDriftChecker } from '../../gateway/session/drift-checker.js';
import type { DriftInput } from '../../gateway/session/drift.js';
import { WorkerDriftChecker } from '../../gateway/session/drift-worker-checker.js';
import { testCodec } from '../helpers/stack.js';

const TOOLS: ToolSpec[] = [{ type: 'function', function: { name: 'shell', parameters: { type: 'object', properties: { command: { type: 'string' } } } } }];

const TURNS: [ChatMessage[], ChatMessage][] = [
  [
    [
      { role: 'system', content: 'You fix bugs.' },
      { role: 'user', content: 'The widget test fails.' },
    ],
    { role: 'assistant', content: '', tool_calls: [{ name: 'shell', arguments: { command: 'ls' } }] },
  ],
  [[{ role: 'tool', content: 'widget.py\ntest_widget.py' }], { role: 'assistant', content: 'Fixed it.' }],
];

/** Two chains of the same history: one as the template renders it, one whose engine saw another token at `at`. */
async function inputs(at: number): Promise<DriftInput[]> {
  const codec = await testCodec();
  const history = TURNS.flatMap(([messages, reply]) => [...messages, reply]);
  const rendered = await codec.tokenizer.encode(codec.template.render(history, { tools: TOOLS, addGenerationPrompt: false }));
  const turns = TURNS.map(([messages, reply]) => ({ messagesJson: JSON.stringify(messages), replyJson: JSON.stringify(reply) }));
  const changed = Uint32Array.from(rendered);
  changed[at] = changed[at]! + 1;
  const sampledFrom = [20, at + 5];
  return [
    { chainIndex: 0, tools: TOOLS, tokens: Uint32Array.from(rendered), sampledFrom, turns },
    { chainIndex: 1, tools: TOOLS, tokens: changed, sampledFrom, turns },
  ];
}

let started: WorkerDriftChecker | undefined;
afterEach(async () => {
  await started?.close();
  started = undefined;
});

describe('WorkerDriftChecker', () => {
  it('reports on its thread what the check on the event loop reports', async () => {
    const checks = await inputs(40);
    const inline = inlineDriftChecker(await testCodec());
    const expected = [
      { chainIndex: 0, driftOffset: -1, driftTurns: 0 },
      // Drift at 40: the turn sampled from 45 on is counted, the one from 20 is not.
      { chainIndex: 1, driftOffset: 40, driftTurns: 1 },
    ];
    expect(await inline.check(checks)).toEqual(expected);
    const lines: string[] = [];
    started = WorkerDriftChecker.start({}, { check: () => Promise.reject(new Error('the fallback was used')), close: async () => undefined }, (line) => lines.push(line));
    expect(await Promise.all([started.check(checks), started.check(checks.slice(1))])).toEqual([expected, expected.slice(1)]);
    expect(lines).toEqual([]);
  });

  it('checks on the fallback, with one warning, when its thread cannot load the codec', async () => {
    const checks = await inputs(12);
    const lines: string[] = [];
    started = WorkerDriftChecker.start({ modelDir: '/nonexistent/model' }, inlineDriftChecker(await testCodec()), (line) => lines.push(line));
    const expected = [
      { chainIndex: 0, driftOffset: -1, driftTurns: 0 },
      { chainIndex: 1, driftOffset: 12, driftTurns: 2 },
    ];
    expect(await started.check(checks)).toEqual(expected);
    expect(await started.check(checks)).toEqual(expected);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^drift checks: the worker thread cannot check \(.*\/nonexistent\/model.*\); checking on the event loop instead$/);
  });

  it('finishes the checks it has before its thread stops on close, and checks on the fallback after', async () => {
    const checks = await inputs(30);
    let fallbacks = 0;
    const inline = inlineDriftChecker(await testCodec());
    const checker = WorkerDriftChecker.start({}, { check: (i) => (fallbacks++, inline.check(i)), close: async () => undefined }, () => undefined);
    const under = checker.check(checks);
    await checker.close();
    expect((await under).map((r) => r.driftOffset)).toEqual([-1, 30]);
    expect(fallbacks).toBe(0);
    expect((await checker.check(checks)).map((r) => r.driftOffset)).toEqual([-1, 30]);
    expect(fallbacks).toBe(1);
  });
});
