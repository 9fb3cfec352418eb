// What an idle spell does to what a request costs on Node (docs/node-http.md, "process.nextTick
// after an idle spell"). Node builds every tick as an object literal with computed keys; V8 keeps
// one shape per property for it and, once those shapes are freed (a few full collections while no
// tick is queued, as an idle process can get) and made anew, sets three of the four properties the
// slow way for the rest of the process. Two parts:
//   1. process.nextTick alone, in a child started with --expose-gc: nanoseconds per call before
//      and after six full collections with no tick queued.
//   2. ours (dist/cli.js against the bench's upstream simulator, as `npm run bench` runs it) and
//      bare Hono sending ours' body and every header ours sends (bench/baseline-server.mjs), one
//      after the other on the server core: CPU per cached GET /api/issues over BENCH_DURATION
//      seconds of load (17 connections) twice, then the idle spell (bench/lib/tick-probe.cjs, on
//      SIGUSR2), then the same load again.
//   npm run bench:idle-spell                             (about a minute; wrk or autocannon)
import { execFileSync } from 'node:child_process';
import { Agent } from 'node:http';
import { get, headersToReplay } from './lib/http.mjs';
import { startUpstreamSim } from '../build/test/support/fake-upstream/bench-upstream.js';
import { runLoad, signalAndRead, startBff, stopChild } from './lib/processes.mjs';
import { startBaseline } from './scenarios/cached.mjs';
import { API_KEY, env, settings } from './lib/settings.mjs';

const DURATION = Number(env.BENCH_DURATION || 5);
// bench/lib/tick-probe.cjs, which startBff and startBaseline load, makes the spell on SIGUSR2.
const SPELL_ENV = { BENCH_IDLE_SPELL: '1' };

const NEXT_TICK_ALONE = `
const noop = () => {};
const burst = (n) => new Promise((resolve) => {
  let left = n;
  const step = () => {
    for (let i = 0; i < 1000; i++) process.nextTick(noop);
    left -= 1000;
    if (left > 0) setImmediate(step); else setImmediate(resolve);
  };
  step();
});
const nsPerTick = async () => {
  await burst(1_000_000);
  const started = process.cpuUsage();
  await burst(4_000_000);
  const used = process.cpuUsage(started);
  return ((used.user + used.system) * 1000) / 4_000_000;
};
const before = await nsPerTick();
await new Promise((resolve) => setTimeout(resolve, 50));
for (let i = 0; i < 6; i++) gc();
const after = await nsPerTick();
process.stdout.write(JSON.stringify({ before, after }));
`;

async function main() {
  const alone = JSON.parse(
    execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', NEXT_TICK_ALONE], { encoding: 'utf8', timeout: 120_000 }),
  );
  console.log(`Node ${process.version}`);
  console.log(
    `process.nextTick alone: ${alone.before.toFixed(0)} ns a call before the idle spell, ${alone.after.toFixed(0)} ns after (${(alone.after / alone.before).toFixed(2)}×)`,
  );

  const agent = new Agent({ keepAlive: true });
  const path = '/api/issues';
  const servers = [];
  const sim = await startUpstreamSim({ latencyMs: settings.upstreamLatencyMs, apiKey: API_KEY });
  try {
    const ours = await startBff('bff-idle', sim.baseUrl, { nodeArgs: ['--expose-gc'], extraEnv: SPELL_ENV });
    servers.push(ours);
    await get(agent, ours.url + path);
    const hit = await get(agent, ours.url + path);
    if (hit.status !== 200 || hit.headers['x-cache'] !== 'HIT')
      throw new Error(`${path} answered ${hit.status} and is not a cached hit (X-Cache: ${hit.headers['x-cache']})`);
    const constants = { [path]: { body: hit.body, contentType: hit.headers['content-type'], headers: headersToReplay(hit.headers) } };
    const baseline = await startBaseline(servers, 'baseline-same-headers-idle', constants, {
      nodeArgs: ['--expose-gc'],
      extraEnv: SPELL_ENV,
    });

    const cpu = async (server, warmupSec) => {
      const run = await runLoad({
        tool: settings.tool,
        url: server.url + path,
        connections: 17,
        durationSec: DURATION,
        warmupSec,
        serverPid: server.pid,
        expectStatus: 200,
      });
      if (run.errors || run.unexpected || !run.serverCpuUsPerRequest) {
        throw new Error(
          `${server.name}: ${run.errors} errors, ${run.unexpected} answers not 200, CPU per request ${run.serverCpuUsPerRequest}`,
        );
      }
      return run.serverCpuUsPerRequest;
    };
    const rows = [];
    for (const [label, server] of [
      ['ours', ours],
      ['bare Hono, same headers', baseline],
    ]) {
      // Twice before: how far this machine moves a figure with nothing changed.
      const before = [await cpu(server, 2), await cpu(server, 0)];
      const [tickBefore, tickAfter] = await signalAndRead(server, /idle spell: (\d+) (\d+)/);
      const ticks = { before: tickBefore, after: tickAfter };
      const after = await cpu(server, 0);
      rows.push({ label, before, after, ticks });
    }
    for (const { label, before, after, ticks } of rows) {
      const mean = (before[0] + before[1]) / 2;
      console.log(
        `${label}: ${before.map((us) => us.toFixed(1)).join(' and ')} µs CPU a cached hit before the idle spell, ${after.toFixed(1)} µs after (${(after / mean).toFixed(2)}×); a process.nextTick in it ${ticks.before} ns before, ${ticks.after} ns after`,
      );
    }
  } finally {
    for (const server of servers) await stopChild(server.child);
    agent.destroy();
    await sim.close();
  }
}

await main();
