import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The Temporal native module crashes under worker threads; forks are safe.
    pool: 'forks',
    globalSetup: ['test/setup/temporal.ts', 'test/setup/postgres.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
