// A cold archive load of the Worker inside workerd, as @cloudflare/vitest-pool-workers runs it
// locally: for the demo, 450 lean issues and 1,000 fat ones, the wall time the Worker spends on
// it (the fake upstream's own time and the local Cache API's I/O taken out), its subrequests (upstream calls and Cache API
// operations), and the same for the scheduled refresh that follows a TTL later. Locally workerd's
// clock advances during computation, so `performance.now()` times work; there is no CPU clock in
// workerd, and the fake upstream answers in the isolate with no latency, so the figure is the
// Worker's work with no I/O wait in it: an estimate of CPU time, on this machine.
// Run: npx vitest run -c bench/workerd/vitest.config.ts bench/workerd/archive-cold.bench-run.ts
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { it } from 'vitest';
import { createArchive } from '../../src/fake-upstream/archive.js';
import { createFakeUpstream } from '../../src/fake-upstream/fake.js';
import { createWorker } from '../../src/worker-handler.js';

const API_KEY = 'bench-workerd-key-not-real';
const KIB = 1024;

interface Case {
  name: string;
  publication?: ReturnType<typeof createArchive>;
}

/**
 * The Cache API, counting its operations (each one a subrequest of the invocation that makes
 * it) and timing them: locally they are disk I/O, which is wall time but not CPU time.
 */
function countingCache(store: Cache, counter: { ops: number; ms: number }): Cache {
  const timed = async <T>(operation: () => Promise<T>): Promise<T> => {
    counter.ops += 1;
    const started = performance.now();
    try {
      return await operation();
    } finally {
      counter.ms += performance.now() - started;
    }
  };
  return {
    match: (request: RequestInfo | URL, options?: CacheQueryOptions) => timed(() => store.match(request, options)),
    put: (request: RequestInfo | URL, response: Response) => timed(() => store.put(request, response)),
    delete: (request: RequestInfo | URL, options?: CacheQueryOptions) => timed(() => store.delete(request, options)),
  } as Cache;
}

let run = 0;

async function measure({ name, publication }: Case): Promise<Measured[]> {
  run += 1;
  const baseUrl = `https://upstream-${run}.bench/v1`;
  const fake = createFakeUpstream({ apiKey: API_KEY, baseUrl, ...(publication ? { publication } : {}) });
  const counts = { calls: 0, fakeMs: 0, bytes: 0 };
  // The fake's own work (building and serializing pages) is timed apart and taken out.
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    counts.calls += 1;
    const started = performance.now();
    const answer = await fake.fetch(input, init);
    const body = await answer.arrayBuffer();
    counts.fakeMs += performance.now() - started;
    counts.bytes += body.byteLength;
    return new Response(body, { status: answer.status, headers: answer.headers });
  }) as typeof globalThis.fetch;
  const cache = { ops: 0, ms: 0 };
  let time = Date.now();
  const now = () => time;
  const env = { NEWSLETTER_API_KEY: API_KEY, NEWSLETTER_API_BASE_URL: baseUrl, NODE_ENV: 'production' };
  const isolate = () => createWorker({ fetch, now, write: () => undefined, sharedCache: countingCache(caches.default, cache) });

  async function invocation(label: string, act: (ctx: ExecutionContext) => Promise<unknown>): Promise<Measured> {
    Object.assign(counts, { calls: 0, fakeMs: 0, bytes: 0 });
    Object.assign(cache, { ops: 0, ms: 0 });
    const ctx = createExecutionContext();
    const started = performance.now();
    await act(ctx);
    await waitOnExecutionContext(ctx);
    const workerMs = performance.now() - started - counts.fakeMs - cache.ms;
    return { label, workerMs, calls: counts.calls, bytes: counts.bytes, cacheOps: cache.ops };
  }

  const measured: Measured[] = [];
  measured.push(
    await invocation('cold GET /api/issues', async (ctx) => {
      const response = await isolate().fetch(new Request('https://bff.example/api/issues'), env, ctx);
      if (response.status !== 200) throw new Error(`${name}: cold load answered ${response.status}`);
      await response.arrayBuffer();
    }),
  );
  time += 61_000;
  measured.push(await invocation('scheduled refresh, a TTL later', (ctx) => isolate().scheduled({ cron: '* * * * *', scheduledTime: time }, env, ctx)));
  measured.push(
    await invocation('GET /api/issues, new isolate', async (ctx) => {
      const response = await isolate().fetch(new Request('https://bff.example/api/issues'), env, ctx);
      await response.arrayBuffer();
    }),
  );
  return measured;
}

interface Measured {
  label: string;
  workerMs: number;
  calls: number;
  bytes: number;
  cacheOps: number;
}

const ROUNDS = 3;

it('measures a cold archive load in workerd', async () => {
  const cases: Case[] = [
    { name: 'demo (the sample publication)' },
    { name: '450 lean issues (5 KiB of HTML each)', publication: createArchive({ issues: 450, contentBytes: 5 * KIB }) },
    { name: '1,000 fat issues (150 KiB of HTML each)', publication: createArchive({ issues: 1_000, contentBytes: 150 * KIB }) },
  ];
  const report: string[] = [];
  for (const entry of cases) {
    const rounds: Measured[][] = [];
    for (let round = 0; round < ROUNDS; round += 1) rounds.push(await measure(entry));
    report.push(entry.name);
    rounds[0]!.forEach(({ label, calls, bytes, cacheOps }, step) => {
      const ms = rounds.map((measured) => measured[step]!.workerMs).sort((a, b) => a - b);
      report.push(
        `  ${label.padEnd(32)} median ${ms[Math.floor(ROUNDS / 2)]!.toFixed(0).padStart(5)} ms (min ${ms[0]!.toFixed(0)})` +
          `  ${String(calls).padStart(3)} upstream calls (${(bytes / KIB / KIB).toFixed(1)} MiB)  ${cacheOps} Cache API ops`,
      );
    });
  }
  console.log(`cold archive load in workerd (${ROUNDS} rounds), Worker wall ms without the fake upstream's time or Cache API I/O:\n${report.join('\n')}`);
});
