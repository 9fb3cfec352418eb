/**
 * The workerd project's global setup, in the test process: drops the one line workerd logs when
 * the pool closes its WebSocket to the runner at shutdown (`workerd/api/web-socket.c++:821:
 * disconnected: WebSocket peer disconnected`). The pool runs workerd with `--verbose` and passes
 * workerd's messages to this process's stdout and stderr through its own filter, which lists this
 * message from @cloudflare/vitest-pool-workers 0.16.6 on; that release needs Node 22
 * (docs/dependencies.md). Only whole lines that are exactly that message are dropped.
 */
const PEER_DISCONNECTED = /^(?:exception = )?workerd\/api\/web-socket\.c\+\+:\d+: disconnected: WebSocket peer disconnected$/;

type Write = (chunk: unknown, ...rest: unknown[]) => boolean;

function dropPeerDisconnected(stream: NodeJS.WriteStream): void {
  const write = stream.write.bind(stream) as Write;
  const filtered: Write = (chunk, ...rest) => {
    if (typeof chunk !== 'string' || !chunk.includes('WebSocket peer disconnected')) return write(chunk, ...rest);
    const lines = chunk.split('\n');
    const kept = lines.filter((line) => !PEER_DISCONNECTED.test(line));
    if (kept.length === lines.length) return write(chunk, ...rest);
    if (kept.some((line) => line !== '')) return write(kept.join('\n'), ...rest);
    // Nothing else was in the chunk: a callback passed with it still runs, as after a write.
    const callback = rest.find((argument): argument is () => void => typeof argument === 'function');
    if (callback) queueMicrotask(callback);
    return true;
  };
  stream.write = filtered as typeof stream.write;
}

/**
 * Installed for the rest of the test process, without a teardown: vitest runs global teardowns
 * before it closes the pool, and the line comes when the pool closes.
 */
export default function quietPoolShutdown(): void {
  dropPeerDisconnected(process.stdout);
  dropPeerDisconnected(process.stderr);
}
