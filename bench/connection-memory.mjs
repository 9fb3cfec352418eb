// What one open connection costs the service in memory: the service (dist/, demo mode) runs in a
// child with --expose-gc; this process opens BENCH_MEMORY_CONNECTIONS sockets to it of one kind at
// a time, and the child reports its memory after a full collection before and after. Kinds: a
// socket that has sent nothing, one kept alive after an answered GET, and a slowloris (a request
// head begun, 120 bytes or 15 KiB, never ended). Prints bytes per connection (RSS and V8 heap, and Node's
// buffers outside the heap). The default cap (MAX_CONNECTIONS) is chosen from these figures
// (docs/node-http.md "What a connection costs").
//   npm run build && node bench/connection-memory.mjs      (any Node: run it with that node binary)
import { fork } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { HOST, root } from './lib/settings.mjs';
import { sleep, table } from './lib/stats.mjs';

const COUNT = Number(process.env.BENCH_MEMORY_CONNECTIONS ?? 4000);
/** Spread over several loopback addresses, as a crowd would be. */
const ADDRESSES = ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5'];

if (process.argv[2] === '--serve') {
  // The child: the service itself, and a memory reading after gc() on each message.
  const { startNode } = await import(new URL('../dist/node.js', import.meta.url).href);
  await startNode(process.env);
  process.on('message', async () => {
    for (let round = 0; round < 3; round += 1) {
      globalThis.gc();
      await new Promise((resolve) => setImmediate(resolve));
    }
    const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
    process.send({ rss, heapUsed, external, arrayBuffers });
  });
} else {
  const rows = [];
  // A fresh service for each kind: RSS a process has grown to is not given back, so a kind
  // measured after another would reuse its pages.
  for (const kind of ['nothing sent', 'kept alive after a GET', 'slowloris head', 'slowloris head of 15 KiB'])
    rows.push(await measure(kind));
  process.stdout.write(
    `Memory per open connection (${COUNT.toLocaleString('en')} at a time, a fresh service for each kind; Node ${process.version}; ${new Date().toISOString()})\n` +
      `${table(['connection', 'count', 'seconds to open', 'RSS bytes each', 'V8 heap bytes each', 'external bytes each'], rows, [false, true, true, true, true, true])}\n`,
  );
}

async function measure(kind) {
  const port = await freePort();
  const child = fork(fileURLToPath(import.meta.url), ['--serve'], {
    cwd: root,
    execArgv: ['--expose-gc'],
    // Both caps far above COUNT (the per-client one is for trees where it still exists).
    env: {
      PATH: process.env.PATH ?? '',
      HOST,
      PORT: String(port),
      MAX_CONNECTIONS: '1000000',
      MAX_CONNECTIONS_PER_CLIENT: '1000000',
      ACCESS_LOG: 'summary',
      HEADERS_TIMEOUT_SECONDS: '15',
      REQUEST_TIMEOUT_SECONDS: '30',
    },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const memory = () =>
    new Promise((resolve) => {
      child.once('message', resolve);
      child.send('measure');
    });
  try {
    await waitUntilServing(port);
    // A warm-up round of the same kind first: the first connections also compile code.
    await closeAll(await openMany(port, kind, 200));
    const before = await memory();
    const startedAt = performance.now();
    const sockets = await openMany(port, kind, COUNT);
    const after = await memory();
    const seconds = (performance.now() - startedAt) / 1000;
    // Node closes an idle kept-alive connection after 5 s, a head not ended after HEADERS_TIMEOUT_SECONDS.
    if (seconds > (kind === 'kept alive after a GET' ? 4.5 : 14))
      throw new Error(`opening ${COUNT} took ${seconds.toFixed(1)} s: too long to measure them all open`);
    await closeAll(sockets);
    const per = (name) => Math.round((after[name] - before[name]) / COUNT).toLocaleString('en');
    return [kind, COUNT.toLocaleString('en'), seconds.toFixed(1), per('rss'), per('heapUsed'), per('external')];
  } finally {
    child.kill('SIGKILL');
  }
}

async function waitUntilServing(port) {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const sockets = await openMany(port, 'kept alive after a GET', 1).catch(() => []);
    if (sockets.length === 1) return closeAll(sockets);
    await sleep(100);
  }
  throw new Error('the service did not answer within 10 s');
}

/** `count` sockets of `kind`, opened 500 at a time; resolves once each is connected (and answered, for a GET). */
async function openMany(port, kind, count) {
  const sockets = [];
  for (let start = 0; start < count; start += 500) {
    const batch = [];
    for (let index = start; index < Math.min(count, start + 500); index += 1) {
      batch.push(
        new Promise((resolve, reject) => {
          const socket = connect({ host: HOST, port, localAddress: ADDRESSES[index % ADDRESSES.length] });
          socket.once('error', reject);
          // Closed before it was ready (a timeout or a cap of the service): the figures would be wrong.
          socket.once('close', () => reject(new Error(`a ${kind} connection was closed by the service`)));
          socket.once('connect', () => {
            if (kind === 'nothing sent') return resolve(socket);
            if (kind.startsWith('slowloris')) {
              const padding = kind === 'slowloris head' ? '' : `X-Padding: ${'p'.repeat(15 * 1024)}\r\n`;
              socket.write(`GET /api/categories HTTP/1.1\r\nHost: ${HOST}\r\nUser-Agent: a-slow-client/1.0\r\n${padding}X-Slow: 1`);
              return resolve(socket);
            }
            socket.write(`GET /api/categories HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`);
            let received = '';
            socket.on('data', (chunk) => {
              received += chunk.toString('latin1');
              const head = received.indexOf('\r\n\r\n');
              const length = Number(/\r\ncontent-length: (\d+)/i.exec(received)?.[1] ?? -1);
              if (head >= 0 && length >= 0 && received.length >= head + 4 + length) resolve(socket);
            });
          });
        }),
      );
    }
    sockets.push(...(await Promise.all(batch)));
  }
  return sockets;
}

async function closeAll(sockets) {
  await Promise.all(
    sockets.map(
      (socket) =>
        new Promise((resolve) => {
          socket.once('close', resolve);
          socket.destroy();
        }),
    ),
  );
}

/** A port free on HOST (not lib/processes.mjs's: that pins this process, and the forked service with it, to one core). */
async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, HOST, resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}
