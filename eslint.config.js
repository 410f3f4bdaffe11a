import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', '.tools/', '.data/', 'tasks/pack/', 'clients/'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // Workflow code runs in Temporal's deterministic sandbox: no Node builtins, no I/O.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: ['node:*', 'fs', 'path', 'child_process', '../activities/*.js', '../activities/index.js'] },
      ],
    },
  },
);
