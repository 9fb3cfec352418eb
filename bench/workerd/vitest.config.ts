import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { defineConfig } from 'vitest/config';

/**
 * `npx vitest run -c bench/workerd/vitest.config.ts [file]`: measures inside workerd (the
 * Workers runtime) as @cloudflare/vitest-pool-workers runs it locally: a cached hit through
 * `app.request()` (in-process.bench-run.ts) and a cold archive load
 * (archive-cold.bench-run.ts). Not part of `npm test`: they print figures.
 */
export default defineConfig({
  plugins: [cloudflareTest({ miniflare: { compatibilityDate: '2026-05-01' } })],
  test: {
    name: 'workerd-bench',
    root: new URL('../..', import.meta.url).pathname,
    include: ['bench/workerd/*.bench-run.ts'],
    testTimeout: 300_000,
  },
});
