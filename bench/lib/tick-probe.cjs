// Preloaded (`--require`) into every server process of the bench. On SIGUSR2 it times
// process.nextTick in that process and writes `tick probe: <ns a call>` to stderr: a process whose
// ticks went off V8's fast path after an idle spell costs several times a normal one
// (docs/performance.md, "A process off V8's fast path for ticks").
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
  // From a timer, not a tick: no tick object of the probe's own is alive when it starts.
  setTimeout(() => nsPerTick((ns) => process.stderr.write(`tick probe: ${ns}\n`)), 50);
});
