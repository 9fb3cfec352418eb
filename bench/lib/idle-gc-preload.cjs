// Preloaded by bench/idle-spell.mjs into a server started with --expose-gc. On SIGUSR2: what a
// process.nextTick costs in this process, an idle spell as V8's memory reducer makes one (full
// collections while no tick is queued), what a process.nextTick costs after it; then one line on
// stderr: `idle spell: <ns before> <ns after>`.
'use strict';
const noop = () => {};

/** CPU nanoseconds per process.nextTick over 200,000 calls, in bursts of 1,000 as a busy server makes them. */
function nsPerTick(then) {
  const started = process.cpuUsage();
  let left = 200_000;
  const step = () => {
    for (let i = 0; i < 1000; i += 1) process.nextTick(noop);
    left -= 1000;
    if (left > 0) return setImmediate(step);
    const used = process.cpuUsage(started);
    setImmediate(() => then(((used.user + used.system) * 1000) / 200_000));
  };
  step();
}

process.on('SIGUSR2', () => {
  // From timers, not ticks: no tick object is alive while the collections run.
  setTimeout(() => {
    nsPerTick((before) => {
      setTimeout(() => {
        for (let i = 0; i < 6; i += 1) globalThis.gc();
        nsPerTick((after) => process.stderr.write(`idle spell: ${before.toFixed(0)} ${after.toFixed(0)}\n`));
      }, 50);
    });
  }, 50);
});
