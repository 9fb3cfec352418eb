// Preloaded (`--require`) into every server process of the bench. On SIGUSR2 it times
// process.nextTick in that process and writes `tick probe: <ns a call>` to stderr: a process whose
// ticks went off V8's fast path after an idle spell costs several times a normal one
// (docs/node-http.md, "process.nextTick after an idle spell"). With BENCH_IDLE_SPELL=1 and
// --expose-gc (bench/idle-spell.mjs) it then makes such a spell, six full collections while no
// tick is queued, times the ticks again and writes `idle spell: <ns before> <ns after>`.
'use strict';
const noop = () => {};

/**
 * CPU nanoseconds per process.nextTick over 200,000 calls, in bursts of 1,000 as a busy server
 * makes them, after 50,000 untimed ones (the probe's own code warming up).
 */
function nsPerTick(then) {
  let started;
  let left = 250_000;
  const step = () => {
    if (left === 200_000) started = process.cpuUsage();
    for (let i = 0; i < 1000; i += 1) process.nextTick(noop);
    left -= 1000;
    if (left > 0) return setImmediate(step);
    const used = process.cpuUsage(started);
    setImmediate(() => then(Math.round(((used.user + used.system) * 1000) / 200_000)));
  };
  step();
}

process.on('SIGUSR2', () => {
  // From timers, not ticks: no tick object is alive while the collections run.
  setTimeout(() => {
    nsPerTick((before) => {
      process.stderr.write(`tick probe: ${before}\n`);
      if (process.env.BENCH_IDLE_SPELL !== '1' || typeof globalThis.gc !== 'function') return;
      setTimeout(() => {
        for (let i = 0; i < 6; i += 1) globalThis.gc();
        nsPerTick((after) => process.stderr.write(`idle spell: ${before} ${after}\n`));
      }, 50);
    });
  }, 50);
});
