import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    // Every test is deterministic and runs without the network: a hang is a bug, not slowness.
    testTimeout: 20_000,
  },
});
