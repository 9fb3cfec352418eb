/**
 * The workerd project's global setup, in the test process: drops the one line workerd logs when
 * the pool closes its WebSocket to the runner at shutdown (`web-socket.c++: disconnected:
 * WebSocket peer disconnected`). The pool runs workerd with `--verbose` and passes workerd's
 * messages to this process's stdout and stderr through its own filter, which lists this message
 * from @cloudflare/vitest-pool-workers 0.16.6 on; that release needs Node 22
 * (docs/dependencies.md). Only lines holding exactly that message are dropped.
 */
const PEER_DISCONNECTED = /web-socket\.c\+\+:\d+: disconnected: WebSocket peer disconnected/;

type Write = (chunk: unknown, ...rest: unknown[]) => boolean;

function dropPeerDisconnected(stream: NodeJS.WriteStream): void {
  const write = stream.write.bind(stream) as Write;
  const filtered: Write = (chunk, ...rest) => {
    if (typeof chunk !== 'string' || !PEER_DISCONNECTED.test(chunk)) return write(chunk, ...rest);
    const kept = chunk
      .split('\n')
      .filter((line) => !PEER_DISCONNECTED.test(line))
      .join('\n');
    if (kept.trim() !== '') return write(kept, ...rest);
    // Nothing left to write: a callback passed with the chunk still runs, as after a write.
    const callback = rest.find((argument): argument is () => void => typeof argument === 'function');
    if (callback) queueMicrotask(callback);
    return true;
  };
  stream.write = filtered as typeof stream.write;
}

export default function quietPoolShutdown(): void {
  dropPeerDisconnected(process.stdout);
  dropPeerDisconnected(process.stderr);
}
