// A cached hit through `app.request()` inside workerd: the general path, the whole of a cached
// hit's work on Workers, for the build in dist/ (`npm run build` first). Run by
// bench/workerd/vitest.config.ts. Locally (not when deployed), workerd's clock advances during
// computation, so `performance.now()` times it; workerd has no per-process CPU clock, so this is
// wall time on an otherwise idle isolate.
import { it } from 'vitest';
// @ts-expect-error a JavaScript module of the bench, without types
import { createDemoService } from '../lib/demo-app.mjs';

const ROUNDS = 5;
const N = 5_000;
const ORIGIN = 'https://site.example';

it('measures a cached hit through app.request() in workerd', async () => {
  const { service, slug, logged } = (await createDemoService(ORIGIN)) as {
    service: { app: { request(path: string, init?: RequestInit): Promise<Response> } };
    slug: string;
    logged: () => number;
  };
  const { app } = service;
  const rows: string[] = [];
  for (const [name, path] of [
    ['/api/issues', '/api/issues'],
    ['/api/issues/:slug', `/api/issues/${slug}`],
  ] as const) {
    for (const [origin, headers] of [
      ['no Origin', {}],
      ['allowed Origin', { Origin: ORIGIN }],
    ] as const) {
      await app.request(path, { headers });
      const rounds: number[] = [];
      for (let round = 0; round < ROUNDS; round += 1) {
        const started = performance.now();
        for (let i = 0; i < N; i += 1) {
          const res = await app.request(path, { headers });
          if (res.headers.get('x-cache') !== 'HIT') throw new Error(`${path} is not a cached hit`);
          await res.arrayBuffer();
        }
        rounds.push(((performance.now() - started) * 1000) / N);
      }
      rounds.sort((a, b) => a - b);
      rows.push(
        `${`${name} (${origin})`.padEnd(34)} median ${rounds[Math.floor(ROUNDS / 2)]!.toFixed(1)} µs, min ${rounds[0]!.toFixed(1)} µs`,
      );
    }
  }
  console.log(
    `general app.request() in workerd, wall µs per cached hit (${ROUNDS} rounds × ${N}):\n${rows.join('\n')}\n(${logged()} bytes of access log)`,
  );
});
