import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import type { SyncTokenizer } from '../gateway/codec/tokenizer.js';
import type { Rng } from './prng.js';
import { adaptTurn, parseDeclaredTools } from './tool-mapping.js';

/**
 * The scripted policy: what the simulated model "answers". A task is recognised by a string in
 * the conversation (see `ScriptedPolicy.findTask`); each episode of it follows one of two branches
 * (solving the task or wandering), one scripted assistant turn per model call, written in Qwen3's
 * native format.
 */

export const ScriptedTurnSchema = z.object({
  /** Reasoning, emitted inside `<think>…</think>`. */
  thought: z.string(),
  /** A tool call, emitted as a Qwen3 `<tool_call>` block; null (the default) for none. */
  tool: z
    .object({ name: z.string().min(1), arguments: z.record(z.string(), z.unknown()) })
    .nullable()
    .default(null),
  /** Visible text: the answer when there is no tool, else text before the tool call. */
  content: z.string().optional(),
});

export const TaskScriptSchema = z.object({
  taskId: z.string().min(1),
  /**
   * Selects the task: must occur in one of the prompt's user messages (tool results aside), or
   * failing that in a system turn; in a request that declares no tools, in its first user message.
   * Agents open with context of their own (Codex's `<environment_context>`, a system reminder), so
   * the task need not be in the first message.
   */
  match: z.string().min(1),
  solve: z.array(ScriptedTurnSchema),
  /** Default: no wander turns, so a wandering episode answers "Done." at once. */
  wander: z.array(ScriptedTurnSchema).default([]),
});

/**
 * A fixed answer for prompts that contain every string of `when` (in the opening system turn or
 * the first user turn): how the simulated engine plays a reward judge, whose answer depends on
 * what the prompt quotes rather than on an episode's branch.
 */
export const FixedAnswerSchema = z.object({
  when: z.array(z.string().min(1)).min(1),
  /** Default: no reasoning. */
  thought: z.string().default(''),
  content: z.string(),
});

export const PolicyScriptSchema = z.object({
  /** Checked in order before `tasks`; the first whose strings all occur answers. Default none. */
  answers: z.array(FixedAnswerSchema).default([]),
  /** Default: none, so every request gets the short fallback answer. */
  tasks: z.array(TaskScriptSchema).default([]),
  /** Chance that an episode takes the wander branch at its first turn. Default 0.3. */
  wanderProbability: z.number().min(0).max(1).default(0.3),
});

export type ScriptedTurn = z.output<typeof ScriptedTurnSchema>;
export type FixedAnswer = z.output<typeof FixedAnswerSchema>;
export type TaskScript = z.output<typeof TaskScriptSchema>;
export type PolicyScript = z.output<typeof PolicyScriptSchema>;
/** What callers may write: defaults not yet applied. */
export type PolicyScriptInput = z.input<typeof PolicyScriptSchema>;

/** Reads and validates a policy script from a JSON file. */
export async function loadPolicyScript(file: string): Promise<PolicyScript> {
  const parsed = PolicyScriptSchema.safeParse(JSON.parse(await readFile(file, 'utf8')));
  if (!parsed.success)
    throw new Error(`${file} is not a policy script: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/**
 * JSON as Python's `json.dumps(value, ensure_ascii=False)` prints it (what `tojson` in Qwen3's
 * chat template renders): `", "` and `": "` separators, keys in insertion order.
 */
export function pythonJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const items = Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${pythonJson(v)}`);
    return `{${items.join(', ')}}`;
  }
  if (typeof value === 'number' && Number.isFinite(value)) {
    // Python pads exponents to two digits (1e-07 where JavaScript prints 1e-7).
    return String(value).replace(/e([+-])(\d)$/, 'e$10$2');
  }
  return JSON.stringify(value ?? null);
}

const FALLBACK_TURN: ScriptedTurn = { thought: '', tool: null, content: 'Done.' };

/** One assistant turn as Qwen3 writes it, up to (not including) `<|im_end|>`. */
export function renderTurn(turn: ScriptedTurn): string {
  // Same trimming as the chat template applies when it re-renders the turn as history, so the
  // sampled tokens and a later full render agree.
  const thought = turn.thought.replace(/^\n+|\n+$/g, '');
  const content = (turn.content ?? '').replace(/^\n+/, '');
  let body = content;
  if (turn.tool) {
    const call = `<tool_call>\n{"name": ${JSON.stringify(turn.tool.name)}, "arguments": ${pythonJson(turn.tool.arguments)}}\n</tool_call>`;
    body = content ? `${content}\n${call}` : call;
  }
  return `<think>\n${thought}\n</think>\n\n${body}`;
}

export type Branch = 'solve' | 'wander';

/** What the policy decided for one request. */
export interface PolicyTurn {
  /** Sampled token ids, ending with `<|im_end|>`. */
  tokenIds: number[];
  taskId: string | null;
  branch: Branch | null;
  /** Index of the assistant turn being generated (0 for the first). */
  turn: number;
}

/** The parts of a ChatML prompt the policy looks at. */
interface PromptShape {
  /** The opening system turn (where the template lists the tools), if any. */
  system: string | null;
  /** The user messages, tool results left out, in order; each decoded when first read. */
  users: (() => string)[];
  /** Every system turn (a developer message renders as one), in order; decoded when read. */
  systems: (() => string)[];
  firstAssistant: string | null;
  /** Completed assistant turns. */
  assistantTurns: number;
  /** Text already written after the final `<|im_start|>assistant\n` (e.g. `<think>\n`). */
  openTail: string;
}

export class ScriptedPolicy {
  private readonly imStart: number;
  private readonly imEnd: number;

  constructor(
    private readonly script: PolicyScript,
    private readonly tokenizer: SyncTokenizer,
  ) {
    this.imStart = tokenizer.tokenId('<|im_start|>');
    this.imEnd = tokenizer.tokenId('<|im_end|>');
  }

  /** The end-of-turn token id, `<|im_end|>`. */
  get endOfTurnId(): number {
    return this.imEnd;
  }

  /** Chooses and tokenizes the next assistant turn for a prompt; `rng` draws the branch. */
  respond(promptIds: readonly number[], rng: Rng): PolicyTurn {
    const shape = this.shape(promptIds);
    const opening = `${shape.system ?? ''}\n${shape.users[0]?.() ?? ''}`;
    const fixed = this.script.answers.find((a) => a.when.every((w) => opening.includes(w)));
    if (fixed) {
      const text = continuation(
        renderTurn({ thought: fixed.thought, tool: null, content: fixed.content }),
        shape.openTail,
      );
      return {
        tokenIds: [...this.tokenizer.encode(text), this.imEnd],
        taskId: null,
        branch: null,
        turn: shape.assistantTurns,
      };
    }
    const tools = parseDeclaredTools(shape.system ?? '');
    const found = this.findTask(shape, tools !== null);
    const task = found?.task;
    const k = shape.assistantTurns;
    let branch: Branch | null = null;
    let turn = FALLBACK_TURN;
    if (task) {
      branch =
        k === 0
          ? rng() < this.script.wanderProbability
            ? 'wander'
            : 'solve'
          : branchOf(task, shape.firstAssistant);
      // Into the tools this agent declared, so that it runs what the script means.
      turn = adaptTurn(task[branch][k] ?? FALLBACK_TURN, {
        tools,
        instructions: found!.instructions,
      });
    }
    const text = continuation(renderTurn(turn), shape.openTail);
    return {
      tokenIds: [...this.tokenizer.encode(text), this.imEnd],
      taskId: task?.taskId ?? null,
      branch,
      turn: k,
    };
  }

  /**
   * The task of a prompt: the first message holding some task's `match` decides, user messages
   * in order first, then system turns; within that message the first task in script order wins.
   * Tool results are never searched (a command's output may quote another task). A request that
   * declares no tools is searched in its first user message only: besides a bare prompt, it is a
   * side request (a title, a summary, a judgement) that quotes the conversation after its own
   * instruction. `instructions` is what the agent was told up to the task: the opening system turn
   * and the user messages read.
   */
  private findTask(
    shape: PromptShape,
    hasTools: boolean,
  ): { task: TaskScript; instructions: string } | undefined {
    const matching = (text: string) => this.script.tasks.find((t) => text.includes(t.match));
    const read: string[] = [shape.system ?? ''];
    for (const user of hasTools ? shape.users : shape.users.slice(0, 1)) {
      read.push(user());
      const task = matching(read.at(-1)!);
      if (task) return { task, instructions: read.join('\n') };
    }
    for (const system of hasTools ? shape.systems : []) {
      const task = matching(system());
      if (task) return { task, instructions: read.join('\n') };
    }
    return undefined;
  }

  /** Splits the prompt at `<|im_start|>` ids, decoding only the few segments needed. */
  private shape(ids: readonly number[]): PromptShape {
    const starts: number[] = [];
    ids.forEach((id, i) => {
      if (id === this.imStart) starts.push(i);
    });
    const out: PromptShape = {
      system: null,
      users: [],
      systems: [],
      firstAssistant: null,
      assistantTurns: 0,
      openTail: '',
    };
    starts.forEach((start, n) => {
      const end = starts[n + 1] ?? ids.length;
      // A role is one or two tokens; four always reach the newline that ends the header.
      const header = this.tokenizer.decode(ids.slice(start + 1, Math.min(end, start + 5)));
      const role = header.split('\n', 1)[0];
      const close = ids.indexOf(this.imEnd, start);
      const closed = close !== -1 && close < end;
      const body = once(() => {
        const text = this.tokenizer.decode(ids.slice(start + 1, closed ? close : end));
        return text.slice(text.indexOf('\n') + 1);
      });
      if (role === 'system') {
        if (n === 0) out.system = body();
        out.systems.push(body);
      }
      // The template renders tool results as a user turn opening with `<tool_response>`.
      if (role === 'user' && !header.startsWith('user\n<tool_response>')) out.users.push(body);
      if (role !== 'assistant') return;
      if (closed) {
        out.assistantTurns++;
        if (out.firstAssistant === null) out.firstAssistant = body();
      } else if (n === starts.length - 1) {
        out.openTail = body();
      }
    });
    return out;
  }
}

/** `read`, called at most once: a message is decoded only if the search reaches it. */
function once(read: () => string): () => string {
  let text: string | undefined;
  return () => (text ??= read());
}

/** The branch whose first turn the episode took, judged from the first assistant turn's text. */
function branchOf(task: TaskScript, firstAssistant: string | null): Branch {
  if (firstAssistant === null) return 'solve';
  const has = (b: Branch, part: (t: ScriptedTurn) => string) => {
    const t = task[b][0];
    return t !== undefined && part(t) !== '' && firstAssistant.includes(part(t));
  };
  // The thought decides; the rest of the turn breaks ties (e.g. when a re-rendered history lost
  // its reasoning, or both branches open with the same thought).
  const thought = (t: ScriptedTurn) => t.thought.replace(/^\n+|\n+$/g, '');
  const rest = (t: ScriptedTurn) => renderTurn(t).split('</think>\n\n')[1] ?? '';
  for (const part of [thought, rest]) {
    const solve = has('solve', part);
    const wander = has('wander', part);
    if (solve !== wander) return solve ? 'solve' : 'wander';
  }
  return 'solve';
}

/**
 * The part of a turn still to generate when the prompt already ends with `tail` after the
 * generation prompt (a template may pre-fill `<think>\n`, or an empty think block when thinking
 * is off, in which case the model writes only the answer).
 */
function continuation(text: string, tail: string): string {
  if (text.startsWith(tail)) return text.slice(tail.length);
  if (tail.trimEnd().endsWith('</think>'))
    return text.slice(text.indexOf('</think>\n\n') + '</think>\n\n'.length);
  return text;
}
