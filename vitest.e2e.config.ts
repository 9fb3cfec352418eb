import { defineConfig } from 'vitest/config';

/**
 * Browser tests of the example site (`npm run test:e2e`): a real Chromium against the demo
 * server, which the suite builds and starts itself. Not part of `npm test`: they need
 * /usr/bin/chromium (Debian's `chromium` package) and take longer.
 */
export default defineConfig({
  test: {
    include: ['test-e2e/**/*.e2e.test.ts'],
    environment: 'node',
    // One browser and one server for the file; the tests share them in order.
    fileParallelism: false,
    // Building with tsc and starting Chromium take a few seconds on a cold machine.
    hookTimeout: 120_000,
    testTimeout: 60_000,
  },
});
