import { defineConfig } from 'vitest/config';

/**
 * Two projects: `node` runs every suite on Node; `workerd` runs the runtime-neutral suites
 * again inside the Workers runtime (see vitest.workers.config.ts), so the two cannot drift.
 */
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'node',
          include: ['test/**/*.test.ts'],
          exclude: ['test/workers/**'],
          environment: 'node',
          // dist/ is built once for the suites that spawn it (the CLI, the Node entry, the package).
          globalSetup: ['test/build-dist.ts'],
          // Every response of createTestApp's app is checked against openapi.json.
          setupFiles: ['test/contract/record-responses.ts'],
          // Every test is deterministic and runs without the network: a hang is a bug, not slowness.
          testTimeout: 20_000,
        },
      },
      './vitest.workers.config.ts',
    ],
  },
});
