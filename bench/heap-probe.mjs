// Preloaded (`node --expose-gc --import ./bench/heap-probe.mjs dist/cli.js`) into the server
// instance that bench/run.mjs uses for the slug scan, so heap figures can be read without
// touching src/: over the IPC channel, { type: 'mem', id, gc } → gc() (when asked and exposed)
// then process.memoryUsage(). Without an IPC channel it does nothing.
if (typeof process.send === 'function') {
  process.on('message', (message) => {
    if (message?.type !== 'mem') return;
    if (message.gc && typeof globalThis.gc === 'function') {
      globalThis.gc();
      globalThis.gc();
    }
    process.send({ type: 'mem', id: message.id, gcExposed: typeof globalThis.gc === 'function', ...process.memoryUsage() });
  });
  // The channel must not keep a stopping server alive.
  process.channel?.unref?.();
}
