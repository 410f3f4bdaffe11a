import type { ChatTemplate } from './chat-template.js';
import { ChatTemplateError } from './chat-template.js';
import type { ChatMessage, ToolSpec } from './messages.js';
import type { TextTokenizer } from './tokenizer.js';

/**
 * Token-in-token-out encoding (gateway spec, "Incremental encoding, precisely"): the first turn of
 * a chain renders the whole template; every later turn encodes only the appended messages and is
 * appended to the stored tokens, which end with the end-of-turn token the model sampled.
 */
export interface IncrementalEncoder {
  /** Token ids of a full render with the generation prompt. */
  encodeFirst(messages: ChatMessage[], tools: ToolSpec[] | undefined): Promise<number[]>;
  /**
   * Token ids to append after a stored chain that ends with a sampled end-of-turn token: the turn
   * separator, the new messages as the template renders them after a turn, the generation prompt.
   */
  encodeAppended(messages: ChatMessage[], tools: ToolSpec[] | undefined): Promise<number[]>;
  /** Ids of the generation prompt, e.g. `<|im_start|>assistant\n`. */
  readonly generationPrompt: number[];
  /** Id of the end-of-turn token, e.g. `<|im_end|>`. */
  readonly endOfTurnId: number;
  /** The generation prompt ends inside an opened `<think>`: the model's turn starts as reasoning. */
  readonly opensReasoning: boolean;
}

const EMPTY_USER: ChatMessage = { role: 'user', content: '' };

export async function createIncrementalEncoder(template: ChatTemplate, tokenizer: TextTokenizer): Promise<IncrementalEncoder> {
  const probeBare = template.render([EMPTY_USER], { addGenerationPrompt: false });
  const probeGen = template.render([EMPTY_USER], { addGenerationPrompt: true });
  if (!probeGen.startsWith(probeBare)) {
    throw new ChatTemplateError('the generation prompt is not appended after the conversation');
  }
  const generationPromptText = probeGen.slice(probeBare.length);
  const eotAt = probeBare.lastIndexOf(template.endOfTurn);
  if (eotAt < 0) throw new ChatTemplateError(`the template does not end turns with ${template.endOfTurn}`);
  // What the template writes after the end-of-turn token and the model never samples (Qwen: "\n").
  const separator = probeBare.slice(eotAt + template.endOfTurn.length);
  const bases = new BaseRenders();
  const headerless = headerlessRenderer(template, separator);

  return {
    generationPrompt: await tokenizer.encode(generationPromptText),
    opensReasoning: generationPromptText.trimEnd().endsWith('<think>'),
    endOfTurnId: tokenizer.tokenId(template.endOfTurn),
    async encodeFirst(messages, tools) {
      return tokenizer.encode(template.render(messages, { tools, addGenerationPrompt: true }));
    },
    async encodeAppended(messages, tools) {
      // Render the same tool header in both, or none, so cutting the base off leaves only the new turns.
      let base: string;
      let full: string;
      if (headerless) {
        base = headerless.base;
        full = headerless.render([EMPTY_USER, ...messages], { addGenerationPrompt: true });
      } else {
        base = bases.get(tools, () =>
          template.render([EMPTY_USER], { tools, addGenerationPrompt: false }).slice(0, -separator.length || undefined),
        );
        full = template.render([EMPTY_USER, ...messages], { tools, addGenerationPrompt: true });
      }
      if (!full.startsWith(base)) {
        throw new ChatTemplateError('appended messages changed how earlier turns render');
      }
      return tokenizer.encode(full.slice(base.length));
    },
  };
}

/**
 * The header-less render and its base, when the template has one and the base is long enough to
 * hold the separator: the header then sits before everything the cut touches, so both renders
 * leave the same text after it.
 */
function headerlessRenderer(
  template: ChatTemplate,
  separator: string,
): { render: NonNullable<ChatTemplate['renderWithoutToolHeader']>; base: string } | undefined {
  const render = template.renderWithoutToolHeader;
  if (!render) return undefined;
  const bare = render([EMPTY_USER], { addGenerationPrompt: false });
  if (bare.length < separator.length) return undefined;
  return { render, base: bare.slice(0, -separator.length || undefined) };
}

/**
 * The base render (an empty user turn under a tool set's header) by tool set: a chain sends the
 * same tools every turn, and rendering the header costs as much as the turn's own messages.
 */
class BaseRenders {
  /** Insertion order is recency (re-inserted on use). */
  private readonly renders = new Map<string, string>();

  /** @param maxEntries tool sets kept; the least recently used is dropped beyond it. */
  constructor(private readonly maxEntries = 64) {}

  get(tools: ToolSpec[] | undefined, render: () => string): string {
    const key = JSON.stringify(tools ?? null);
    let base = this.renders.get(key);
    if (base === undefined) base = render();
    else this.renders.delete(key);
    this.renders.set(key, base);
    if (this.renders.size > this.maxEntries) this.renders.delete(this.renders.keys().next().value!);
    return base;
  }
}
