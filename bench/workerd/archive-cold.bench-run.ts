// A cold archive load of the Worker inside workerd, as @cloudflare/vitest-pool-workers runs it
// locally: for the demo, 450 lean issues and 1,000 fat ones, the wall time the Worker spends on
// it (the upstream's answers replayed from a recording, the local Cache API's I/O taken out), its subrequests (upstream calls and Cache API
// operations), and the same for the scheduled refresh that follows a TTL later. Locally workerd's
// clock advances during computation, so `performance.now()` times work; there is no CPU clock in
// workerd, and the recorded answers come back at once, so the figure is the Worker's work with
// no I/O wait in it: an estimate of CPU time, on this machine.
// Run: npx vitest run -c bench/workerd/vitest.config.ts bench/workerd/archive-cold.bench-run.ts
import { createExecutionContext, waitOnExecutionContext } from 'cloudflare:test';
import { it } from 'vitest';
import { createArchive } from '../../test/support/fake-upstream/archive.js';
import { createFakeUpstream } from '../../test/support/fake-upstream/fake.js';
import { createWorker } from '../../src/workers/handler.js';

const API_KEY = 'bench-workerd-key-not-real';
const BASE_URL = 'https://upstream.bench/v1';
const KIB = 1024;

interface Case {
  name: string;
  publication?: ReturnType<typeof createArchive>;
}

// Listed newest `sentAt` first, with validators: an upstream a refresh can read only the head of.
const VARIANT = { order: 'newest-sent', validators: 'both' } as const;

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

/** A recorded upstream answer, replayed without the fake's own work. */
interface Recorded {
  status: number;
  headers: [string, string][];
  body: ArrayBuffer;
}

/** What identifies an upstream call: the URL and the validators sent with it. */
const callKey = (input: RequestInfo | URL, init?: RequestInit) => {
  const request = new Request(input, init);
  return `${request.method} ${request.url} ${request.headers.get('if-none-match') ?? ''} ${request.headers.get('if-modified-since') ?? ''}`;
};

// A fixed start, so the replayed run asks exactly what the recorded one did.
const START = Date.UTC(2026, 5, 1);
let run = 0;

/**
 * The three invocations against `fetch`, on a clock starting at START, each in a new isolate and
 * with its own key (so its own Cache API namespace).
 */
async function invocations(name: string, fetch: typeof globalThis.fetch, counts: { calls: number; bytes: number }): Promise<Measured[]> {
  run += 1;
  const cache = { ops: 0, ms: 0 };
  let time = START;
  const now = () => time;
  const env = { NEWSLETTER_API_KEY: `${API_KEY}-${run}`, NEWSLETTER_API_BASE_URL: BASE_URL, NODE_ENV: 'production' };
  const isolate = () => createWorker({ fetch, now, write: () => undefined, sharedCache: countingCache(caches.default, cache) });

  async function invocation(label: string, act: (ctx: ExecutionContext) => Promise<unknown>): Promise<Measured> {
    Object.assign(counts, { calls: 0, bytes: 0 });
    Object.assign(cache, { ops: 0, ms: 0 });
    const ctx = createExecutionContext();
    const started = performance.now();
    await act(ctx);
    await waitOnExecutionContext(ctx);
    const workerMs = performance.now() - started - cache.ms;
    return { label, workerMs, calls: counts.calls, bytes: counts.bytes, cacheOps: cache.ops };
  }

  const measured: Measured[] = [];
  // What any first request of a new isolate costs (the app is built on it), nothing read.
  measured.push(
    await invocation('new isolate, GET /nothing (404)', async (ctx) => {
      const response = await isolate().fetch(new Request('https://bff.example/nothing'), env, ctx);
      await response.arrayBuffer();
    }),
  );
  measured.push(
    await invocation('cold GET /api/issues', async (ctx) => {
      const response = await isolate().fetch(new Request('https://bff.example/api/issues'), env, ctx);
      if (response.status !== 200) throw new Error(`${name}: cold load answered ${response.status}`);
      await response.arrayBuffer();
    }),
  );
  time += 61_000;
  measured.push(
    await invocation('scheduled refresh, a TTL later', (ctx) => isolate().scheduled({ cron: '* * * * *', scheduledTime: time }, env, ctx)),
  );
  measured.push(
    await invocation('GET /api/issues, new isolate', async (ctx) => {
      const response = await isolate().fetch(new Request('https://bff.example/api/issues'), env, ctx);
      await response.arrayBuffer();
    }),
  );
  return measured;
}

/**
 * Records the fake upstream's answers to the three invocations once, then replays them ROUNDS
 * times: a replayed answer costs the isolate a map lookup, so what is timed is the Worker's work
 * (the fake building and serializing 150 MB of pages would otherwise be most of it).
 */
async function measure({ name, publication }: Case): Promise<Measured[][]> {
  const fake = createFakeUpstream({
    apiKey: `${API_KEY}-1`,
    baseUrl: BASE_URL,
    variant: VARIANT,
    now: () => START,
    ...(publication ? { publication } : {}),
  });
  const recorded = new Map<string, Recorded>();
  const counts = { calls: 0, bytes: 0 };
  const record = (async (input: RequestInfo | URL, init?: RequestInit) => {
    // Each run reads with its own key (its own Cache API namespace); the fake knows one.
    const request = new Request(input, init);
    request.headers.set('authorization', `Bearer ${API_KEY}-1`);
    const answer = await fake.fetch(request);
    const body = await answer.arrayBuffer();
    recorded.set(callKey(input, init), { status: answer.status, headers: [...answer.headers], body });
    return new Response(body, { status: answer.status, headers: answer.headers });
  }) as typeof globalThis.fetch;
  const replay = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const answer = recorded.get(callKey(input, init));
    if (!answer) throw new Error(`${name}: the replay asked what the recording did not: ${callKey(input, init)}`);
    counts.calls += 1;
    counts.bytes += answer.body.byteLength;
    return new Response(answer.body, { status: answer.status, headers: answer.headers });
  }) as typeof globalThis.fetch;
  await invocations(name, record, counts);
  const rounds: Measured[][] = [];
  for (let round = 0; round < ROUNDS; round += 1) rounds.push(await invocations(name, replay, counts));
  return rounds;
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
    { name: '450 lean issues (5 KiB of HTML each)', publication: createArchive({ issues: 450, contentBytes: 5 * KIB, draftLeads: true }) },
    {
      name: '1,000 fat issues (90 KiB of HTML + 60 KiB of editor state each)',
      publication: createArchive({ issues: 1_000, contentBytes: 90 * KIB, jsonBytes: 60 * KIB, draftLeads: true }),
    },
  ];
  const report: string[] = [];
  for (const entry of cases) {
    const rounds = await measure(entry);
    report.push(entry.name);
    rounds[0]!.forEach(({ label, calls, bytes, cacheOps }, step) => {
      const ms = rounds.map((measured) => measured[step]!.workerMs).sort((a, b) => a - b);
      report.push(
        `  ${label.padEnd(32)} median ${ms[Math.floor(ROUNDS / 2)]!.toFixed(0).padStart(5)} ms (min ${ms[0]!.toFixed(0)})` +
          `  ${String(calls).padStart(3)} upstream calls (${(bytes / KIB / KIB).toFixed(1)} MiB)  ${cacheOps} Cache API ops`,
      );
    });
  }
  console.log(
    `cold archive load in workerd (${ROUNDS} rounds), Worker wall ms, upstream answers replayed, Cache API I/O taken out:\n${report.join('\n')}`,
  );
});
