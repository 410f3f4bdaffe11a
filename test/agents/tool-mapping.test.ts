import { describe, expect, it } from 'vitest';
import {
  adaptTurn,
  parseDeclaredTools,
  type DeclaredTool,
  type GenericTurn,
} from '../../engine-sim/tool-mapping.js';

const system = (tools: object[]) =>
  `You are an agent.\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n<tools>\n${tools.map((t) => JSON.stringify(t)).join('\n')}\n</tools>\n\nFor each function call, ...`;
const fn = (name: string, properties: Record<string, object>, required: string[] = []) => ({
  type: 'function',
  function: {
    name,
    description: `the ${name} tool`,
    parameters: { type: 'object', properties, required },
  },
});

const claude: DeclaredTool[] = parseDeclaredTools(
  system([
    fn('Bash', { command: {}, timeout: {}, description: {} }, ['command']),
    fn('Write', { file_path: {}, content: {} }, ['file_path', 'content']),
  ]),
)!;
const mini = parseDeclaredTools(system([fn('bash', { command: {} }, ['command'])]))!;
const thought = 'I will look at the parser. Then fix it.';

describe('mapping the script generic tools onto the declared ones', () => {
  it('reads the tools from the rendered system turn, OpenAI or bare form', () => {
    expect(claude.map((t) => [t.name, t.params, t.required])).toEqual([
      ['Bash', ['command', 'timeout', 'description'], ['command']],
      ['Write', ['file_path', 'content'], ['file_path', 'content']],
    ]);
    expect(
      parseDeclaredTools(
        system([
          { name: 'x', input_schema: { properties: { a: {}, b: { type: ['null', 'array'] } } } },
        ]),
      ),
    ).toEqual([{ name: 'x', params: ['a', 'b'], required: [], types: { b: 'array' } }]);
    expect(parseDeclaredTools('no tools here')).toBeNull();
  });

  it('leaves the built-in agent and tool-less requests alone', () => {
    const turn = { thought, tool: { name: 'shell', arguments: { command: 'ls' } } };
    const builtin = parseDeclaredTools(
      system([fn('shell', { command: {} }), fn('write_file', {}), fn('submit', {})]),
    );
    expect(adaptTurn(turn, { tools: builtin, instructions: '' })).toBe(turn);
    expect(adaptTurn(turn, { tools: null, instructions: '' })).toBe(turn);
  });

  it('runs shell commands through the agent shell, with a description where it has one', () => {
    const turn = { thought, tool: { name: 'shell', arguments: { command: 'ls' } } };
    expect(adaptTurn(turn, { tools: claude, instructions: '' }).tool).toEqual({
      name: 'Bash',
      arguments: { command: 'ls', description: 'I will look at the parser.' },
    });
    expect(adaptTurn(turn, { tools: mini, instructions: '' }).tool).toEqual({
      name: 'bash',
      arguments: { command: 'ls' },
    });
  });

  it('writes files with a heredoc that keeps the content exact', () => {
    const write = (content: string) =>
      adaptTurn<GenericTurn>(
        { thought, tool: { name: 'write_file', arguments: { path: "a b'.js", content } } },
        { tools: mini, instructions: '' },
      ).tool!.arguments.command;
    expect(write('x\n')).toBe(`cat > 'a b'\\''.js' <<'WRITE_FILE_EOF'\nx\nWRITE_FILE_EOF`);
    expect(write('WRITE_FILE_EOF')).toBe(
      `head -c -1 > 'a b'\\''.js' <<'WRITE_FILE_EOF_'\nWRITE_FILE_EOF\nWRITE_FILE_EOF_`,
    );
  });

  it('submits with the completion command the instructions name, else with a plain answer', () => {
    const turn = { thought, tool: { name: 'submit', arguments: { summary: 'Fixed it.' } } };
    expect(
      adaptTurn(turn, {
        tools: mini,
        instructions: 'finish with `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`',
      }).tool,
    ).toEqual({
      name: 'bash',
      arguments: { command: 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT' },
    });
    expect(adaptTurn(turn, { tools: claude, instructions: '' })).toMatchObject({
      tool: null,
      content: 'Fixed it.',
    });
  });
});
