import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { defineConfig } from 'vitest/config';

/**
 * `npx vitest run -c bench/workerd/vitest.config.ts`: bench/in-process.mjs's general-path
 * measure, inside workerd (the Workers runtime) as @cloudflare/vitest-pool-workers runs it
 * locally. Not part of `npm test`: it prints figures and checks nothing but that every answer is
 * a cached hit.
 */
export default defineConfig({
  plugins: [cloudflareTest({ miniflare: { compatibilityDate: '2026-05-01' } })],
  test: {
    name: 'workerd-bench',
    root: new URL('../..', import.meta.url).pathname,
    include: ['bench/workerd/in-process.bench-run.ts'],
    testTimeout: 300_000,
  },
});
