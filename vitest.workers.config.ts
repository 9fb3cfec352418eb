import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { defineProject } from 'vitest/config';

/** Suites that need nothing of Node run here too, inside workerd, plus the Worker-only suites. */
export const RUNTIME_NEUTRAL_SUITES = [
  'test/access-log.test.ts',
  'test/app.test.ts',
  'test/config.test.ts',
  'test/config-list-paging.test.ts',
  'test/demo/**/*.test.ts',
  'test/reads/**/*.test.ts',
  'test/routes/**/*.test.ts',
  'test/slug.test.ts',
  'test/subscribe/**/*.test.ts',
  'test/typed-client.test.ts',
  'test/upstream/**/*.test.ts',
  'test/upstream-failures.test.ts',
  'test/watch/archive-changes.test.ts',
  'test/zod.test.ts',
];

export default defineProject({
  plugins: [
    cloudflareTest({
      miniflare: {
        // The same date as wrangler.toml.
        compatibilityDate: '2026-05-01',
        // A Rate Limiting binding as wrangler.toml would declare it (test/workers uses it).
        ratelimits: { SUBSCRIBE_RATE_LIMITER: { simple: { limit: 3, period: 60 } } },
        // The build hook watch's state, as wrangler.toml's optional KV namespace (test/workers/scheduled.test.ts).
        kvNamespaces: ['DEPLOY_HOOK_STATE'],
      },
    }),
  ],
  test: {
    name: 'workerd',
    // Drops workerd's one "WebSocket peer disconnected" line at pool shutdown (see the file).
    globalSetup: ['test/workers/quiet-pool-shutdown.ts'],
    include: [...RUNTIME_NEUTRAL_SUITES, 'test/workers/**/*.test.ts'],
    // Their fake siteverify and alert receiver are loopback HTTP servers, which need Node (and prom-client).
    exclude: ['test/subscribe/challenge.test.ts', 'test/subscribe/surge-alerts.test.ts'],
    // One workerd for the project's files instead of one per file. Per file, the pool closed its
    // WebSocket to the runner and disposed workerd at once; workerd, which the pool runs with
    // --verbose, logged each dropped socket ("web-socket.c++: disconnected: WebSocket peer
    // disconnected") into the test output. Sharing is safe: no module of ours does anything at
    // import time, and each suite builds its own app.
    isolate: false,
    // A hang guard, not a speed test: the CPU-bound suites (100,000 cache reads) took up to 44 s
    // on a loaded 2-core machine while the node project ran beside them.
    testTimeout: 60_000,
  },
});
