/**
 * Maps the scripted policy's generic tools (`shell {command}`, `write_file {path, content}`,
 * `submit {summary}`) onto the tools a request actually declares, so that a real agent program
 * executes what the script means. The engine sees only token ids, but Qwen3's chat template
 * renders the declared tools as one JSON object per line inside `<tools>…</tools>` in the system
 * turn; that is what is parsed here.
 */
import { z } from 'zod';

export interface DeclaredTool {
  name: string;
  /** Parameter names, in declaration order. */
  params: string[];
  required: string[];
  /**
   * Each parameter's JSON schema `type` (the first besides `null` when it lists several); a
   * parameter whose schema names no type is absent.
   */
  types: Record<string, string>;
}

const PropertySchema = z
  .object({ type: z.union([z.string(), z.array(z.string())]).optional() })
  .passthrough();

const ParametersSchema = z
  .object({
    properties: z.record(z.string(), z.unknown()).optional(),
    required: z.array(z.string()).optional(),
  })
  .passthrough();

/** A rendered tool: OpenAI's `{type, function: {...}}` or a bare `{name, parameters|input_schema}`. */
const RenderedToolSchema = z.union([
  z
    .object({ function: z.object({ name: z.string(), parameters: ParametersSchema.optional() }) })
    .transform((t) => t.function),
  z
    .object({
      name: z.string(),
      parameters: ParametersSchema.optional(),
      input_schema: ParametersSchema.optional(),
    })
    .transform((t) => ({ name: t.name, parameters: t.parameters ?? t.input_schema })),
]);

const TOOLS_BLOCK = /<tools>\n([\s\S]*?)\n<\/tools>/;

/** The tools declared in a rendered system turn; `null` when it declares none. */
export function parseDeclaredTools(systemText: string): DeclaredTool[] | null {
  const block = TOOLS_BLOCK.exec(systemText);
  if (!block) return null;
  const tools: DeclaredTool[] = [];
  for (const line of block[1]!.split('\n')) {
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      continue; // not one of the template's JSON lines
    }
    const parsed = RenderedToolSchema.safeParse(json);
    if (!parsed.success) continue;
    const { name, parameters } = parsed.data;
    const properties = parameters?.properties ?? {};
    tools.push({
      name,
      params: Object.keys(properties),
      required: parameters?.required ?? [],
      types: declaredTypes(properties),
    });
  }
  return tools;
}

function declaredTypes(properties: Record<string, unknown>): Record<string, string> {
  const types: Record<string, string> = {};
  for (const [param, schema] of Object.entries(properties)) {
    const parsed = PropertySchema.safeParse(schema);
    const type = parsed.success
      ? [parsed.data.type ?? []].flat().find((t) => t !== 'null')
      : undefined;
    if (type !== undefined) types[param] = type;
  }
  return types;
}

/** The generic tool calls of the script. */
export interface GenericTurn {
  thought: string;
  tool: { name: string; arguments: Record<string, unknown> } | null;
  content?: string;
}

/** What the request tells about the agent beyond its tools. */
export interface AgentSurface {
  tools: DeclaredTool[] | null;
  /** The system and first user text: the agent's instructions. */
  instructions: string;
}

/** mini-swe-agent's way to finish: a command whose output starts with this line. */
const SUBMIT_MARKER = 'COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT';
const SHELL_NAMES =
  /^(shell|bash|shell_command|run_shell_command|execute_command|exec_command|terminal|run_command)$/i;
const DESCRIPTION_PARAMS = ['description'];

/** How a shell tool takes the command line: in one parameter, shaped by its declared type. */
interface ShellRule {
  param: string;
  /** The parameter's declared JSON schema type; `undefined` when its schema names none. */
  type: string | undefined;
  value: (command: string) => unknown;
}

const line = (command: string) => command;
/** An argv for a tool that executes a program directly: the line through `bash -lc`. */
const argv = (command: string) => ['bash', '-lc', command];

/**
 * The rules, tried in order on each declared tool with a shell's name (the first tool that one
 * fits is the shell). A tool that fits none keeps the generic call as written.
 */
const SHELL_RULES: readonly ShellRule[] = [
  // Claude Code's Bash, OpenCode's and pi's bash, Codex's shell_command, mini-swe-agent's bash.
  { param: 'command', type: 'string', value: line },
  { param: 'command', type: undefined, value: line },
  // Codex's shell: `command: string[]`, run without a shell.
  { param: 'command', type: 'array', value: argv },
  // Codex's exec_command (unified exec): `cmd: string`.
  { param: 'cmd', type: 'string', value: line },
  { param: 'cmd', type: undefined, value: line },
  { param: 'cmd', type: 'array', value: argv },
];

interface Shell {
  tool: DeclaredTool;
  rule: ShellRule;
}

function findShell(tools: DeclaredTool[]): Shell | undefined {
  for (const tool of tools) {
    if (!SHELL_NAMES.test(tool.name)) continue;
    const rule = SHELL_RULES.find(
      (r) => tool.params.includes(r.param) && tool.types[r.param] === r.type,
    );
    if (rule) return { tool, rule };
  }
  return undefined;
}

/** The JSON schema type of a value, as a declared `type` names it. */
function jsonType(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (Number.isInteger(value)) return 'integer';
  return typeof value;
}

/** Whether a declared tool takes these arguments as they are: each of a declared type. */
function accepts(tool: DeclaredTool, args: Record<string, unknown>): boolean {
  return Object.entries(args).every(([param, value]) => {
    const declared = tool.types[param];
    const actual = jsonType(value);
    return (
      declared === undefined ||
      declared === actual ||
      (declared === 'number' && actual === 'integer')
    );
  });
}

/**
 * The turn in the agent's own tools. Unchanged when the request declares no tools or declares the
 * generic tool itself with parameters that take its arguments (the built-in agent); a tool with
 * no counterpart is left as written.
 */
export function adaptTurn<T extends GenericTurn>(turn: T, surface: AgentSurface): T {
  const { tools } = surface;
  const call = turn.tool;
  if (!call || !tools || tools.some((t) => t.name === call.name && accepts(t, call.arguments)))
    return turn;
  const shell = findShell(tools);
  const args = call.arguments;
  switch (call.name) {
    case 'shell':
      return shell
        ? { ...turn, tool: shellCall(shell, String(args.command ?? ''), turn.thought) }
        : turn;
    case 'write_file':
      // A heredoc through the shell: agents' own write tools insist on a prior read of the file.
      return shell
        ? {
            ...turn,
            tool: shellCall(
              shell,
              heredoc(String(args.path ?? ''), String(args.content ?? '')),
              turn.thought,
            ),
          }
        : turn;
    case 'submit':
      if (shell && surface.instructions.includes(SUBMIT_MARKER))
        return { ...turn, tool: shellCall(shell, `echo ${SUBMIT_MARKER}`, turn.thought) };
      // Agents with tools stop when an answer has no tool call.
      return { ...turn, tool: null, content: String(args.summary ?? 'Done.') };
    default:
      return turn;
  }
}

function shellCall(
  { tool, rule }: Shell,
  command: string,
  thought: string,
): { name: string; arguments: Record<string, unknown> } {
  const args: Record<string, unknown> = { [rule.param]: rule.value(command) };
  // Claude Code's and OpenCode's shells ask for a short description of the command.
  for (const p of tool.params) if (DESCRIPTION_PARAMS.includes(p)) args[p] = describe(thought);
  return { name: tool.name, arguments: args };
}

/** The thought's first sentence, short enough for a one-line description. */
function describe(thought: string): string {
  const sentence = thought.split(/(?<=[.!?])\s/, 1)[0]!.trim();
  return sentence.length > 80 ? `${sentence.slice(0, 77)}...` : sentence;
}

function heredoc(path: string, content: string): string {
  const quoted = `'${path.replaceAll("'", `'\\''`)}'`;
  // A heredoc always ends with a newline; `head -c -1` drops it when the content has none.
  const [body, sink] = content.endsWith('\n') ? [content, 'cat'] : [`${content}\n`, 'head -c -1'];
  let delimiter = 'WRITE_FILE_EOF';
  while (body.split('\n').includes(delimiter)) delimiter += '_';
  return `${sink} > ${quoted} <<'${delimiter}'\n${body}${delimiter}`;
}
