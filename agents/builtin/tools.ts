/** The built-in agent's tools, declared to the model as OpenAI function tools. */
export const BUILTIN_TOOLS = [
  {
    type: 'function',
    function: {
      name: 'shell',
      description: 'Run a shell command in the repository (/workspace) and return its exit code and output.',
      parameters: {
        type: 'object',
        properties: { command: { type: 'string', description: 'The command, run with /bin/sh -c.' } },
        required: ['command'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'write_file',
      description: 'Create or overwrite a file in the repository.',
      parameters: {
        type: 'object',
        properties: {
          path: { type: 'string', description: 'Path relative to /workspace.' },
          content: { type: 'string', description: 'The whole new file content.' },
        },
        required: ['path', 'content'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'submit',
      description: 'Finish: the current state of the repository is your answer.',
      parameters: {
        type: 'object',
        properties: { summary: { type: 'string', description: 'What you changed and why.' } },
        required: ['summary'],
      },
    },
  },
] as const;

export const SYSTEM_PROMPT =
  'You are a software engineer working in a repository at /workspace. Find and fix the bug the user ' +
  'reports. Use the tools: inspect code with shell, change files with shell or write_file, run the ' +
  'tests, and call submit when you are done. Do not modify the tests.';
