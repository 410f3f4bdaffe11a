import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', '.tools/', '.data/', 'tasks/pack/', 'clients/'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Tests read arbitrary JSON answers of the servers they exercise.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node builtins, no I/O, and
    // activities only as types (the worker supplies them).
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*', 'fs', 'path', 'child_process', 'net', 'http'], message: 'workflows do no I/O' },
            { group: ['../activities/*'], allowTypeImports: true, message: 'workflows import activities as types only' },
          ],
        },
      ],
    },
  },
);
