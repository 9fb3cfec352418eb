// A crowd at one address, an attacker at another: the service (dist/, demo mode, default limits
// unless BENCH_CROWD_ENV adds some, e.g. BENCH_CROWD_ENV=MAX_CONNECTIONS=2048) is visited by
//   - an SSR frontend on 127.0.0.1: Node's own fetch, BURSTS bursts of BURST requests at once;
//   - a NAT on 127.0.0.3: READERS browsers, each with its own kept-alive connection, CLICKS
//     clicks each, a reader's pause between clicks 0.2-1.4 s;
//   - a lone visitor on 127.0.0.4: VISITS tries, each a new connection, one every 100 ms;
// first with nobody attacking, then while 127.0.0.2 holds FLOOD slowloris sockets (half silent,
// half a request head never ended), reopening each the service closes. Every request counts as
// answered 200, another status, reset or closed unanswered, or hung (no answer within 10 s).
// The service's RSS (largest seen, every 200 ms), /readyz and the connections it shed by reason
// (/metrics) are reported for each phase. Then one connection at a time: the next request after
// a 413 (an oversized chunked body; a 100 KB Content-Length), the longest another client waits
// while one kept-alive connection sends 5,000 or 20,000 early-answered posts and closes, and the
// answer to a Host the adapter cannot read.
//   npm run bench:flood
// Everything on loopback; every wait bounded. Env: BENCH_CROWD_FLOOD (1100), BENCH_CROWD_BURSTS
// (5), BENCH_CROWD_BURST (200), BENCH_CROWD_READERS (400), BENCH_CROWD_CLICKS (3), BENCH_CROWD_VISITS (40).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { children, freePort, stopChild } from './lib/processes.mjs';
import { HOST, root } from './lib/settings.mjs';
import { sleep, table } from './lib/stats.mjs';

const SSR = '127.0.0.1';
const FLOODER = '127.0.0.2';
const NAT = '127.0.0.3';
const VISITOR = '127.0.0.4';
const count = (name, fallback) => Math.max(1, Math.round(Number(process.env[name] ?? fallback)));
const FLOOD = count('BENCH_CROWD_FLOOD', 1100);
const BURSTS = count('BENCH_CROWD_BURSTS', 5);
const BURST = count('BENCH_CROWD_BURST', 200);
const READERS = count('BENCH_CROWD_READERS', 400);
const CLICKS = count('BENCH_CROWD_CLICKS', 3);
const VISITS = count('BENCH_CROWD_VISITS', 40);
const HUNG_MS = 10_000;
const extraEnv = Object.fromEntries(
  (process.env.BENCH_CROWD_ENV ?? '')
    .split(',')
    .filter((pair) => pair.includes('='))
    .map((pair) => pair.split('=').map((part) => part.trim())),
);

async function startServer() {
  const port = await freePort();
  const adminPort = await freePort();
  const child = spawn(process.execPath, ['dist/cli.js'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOST, PORT: String(port), ADMIN_PORT: String(adminPort), ...extraEnv },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.add(child);
  for (let attempt = 0; attempt < 100; attempt += 1) {
    if ((await visit(port, VISITOR)).outcome === 200) return { child, port, adminPort };
    await sleep(100);
  }
  throw new Error('the server did not answer within 10 s');
}

/** One GET on a new connection (Connection: close) from `localAddress`: its outcome and how long it took. */
function visit(port, localAddress, path = '/api/categories', timeoutMs = HUNG_MS) {
  const startedAt = performance.now();
  return new Promise((resolve) => {
    let received = '';
    let settled = false;
    const socket = connect({ host: HOST, port, localAddress });
    const done = (outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ outcome, ms: performance.now() - startedAt, received });
    };
    const timer = setTimeout(() => done('hung'), timeoutMs);
    socket.on('connect', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: ${HOST}:${port}\r\nConnection: close\r\n\r\n`));
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', () => done(received.length >= 12 ? Number(received.slice(9, 12)) : 'reset'));
    socket.on('close', () => done(received.length >= 12 ? Number(received.slice(9, 12)) : 'reset'));
  });
}

/** Keeps `size` sockets from FLOODER open, reopening each the server closes, until stopped. */
function flood(port, size) {
  const sockets = new Set();
  let stopped = false;
  let opened = 0;
  const open = (index) => {
    if (stopped || opened >= size * 500) return;
    opened += 1;
    const socket = connect({ host: HOST, port, localAddress: FLOODER });
    sockets.add(socket);
    socket.on('connect', () => {
      if (index % 2 === 1) socket.write(`GET /api/categories HTTP/1.1\r\nHost: ${HOST}\r\nX-Slow: 1`);
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      sockets.delete(socket);
      setTimeout(() => open(index), 10);
    });
  };
  for (let index = 0; index < size; index += 1) open(index);
  return {
    opened: () => opened,
    stop() {
      stopped = true;
      for (const socket of sockets) socket.destroy();
    },
  };
}

/** Outcomes of a set of requests: 200, another status, reset (or closed unanswered; `how` names the error), hung. */
function tally() {
  const counts = { requests: 0, ok: 0, other: 0, reset: 0, hung: 0, errors: {} };
  return {
    counts,
    add(outcome, how) {
      counts.requests += 1;
      if (outcome === 200) counts.ok += 1;
      else if (outcome === 'hung') counts.hung += 1;
      else if (outcome === 'reset') {
        counts.reset += 1;
        if (how) counts.errors[how] = (counts.errors[how] ?? 0) + 1;
      } else counts.other += 1;
    },
  };
}

/** The SSR frontend: Node's fetch (its pool opens a connection per request in flight and keeps them). */
async function ssr(port, paths) {
  const result = tally();
  for (let burst = 0; burst < BURSTS; burst += 1) {
    const outcomes = await Promise.all(
      Array.from({ length: BURST }, async (_, index) => {
        try {
          const response = await fetch(`http://${HOST}:${port}${paths[index % paths.length]}`, { signal: AbortSignal.timeout(HUNG_MS) });
          await response.arrayBuffer();
          return response.status;
        } catch (error) {
          return error.name === 'TimeoutError' ? 'hung' : { how: error.cause?.code ?? error.cause?.message ?? error.message };
        }
      }),
    );
    for (const outcome of outcomes) typeof outcome === 'object' ? result.add('reset', outcome.how) : result.add(outcome);
    await sleep(300);
  }
  return result.counts;
}

/** One GET through a browser's agent (one kept-alive connection). */
function click(agent, port, path) {
  return new Promise((resolve) => {
    let settled = false;
    const done = (outcome) => {
      if (!settled) resolve(outcome);
      settled = true;
    };
    const req = request({ host: HOST, port, path, agent, timeout: HUNG_MS }, (res) => {
      res.resume();
      res.on('end', () => done(res.statusCode));
      res.on('error', () => done('reset'));
    });
    req.on('timeout', () => {
      req.destroy();
      done('hung');
    });
    req.on('error', (error) => done({ how: error.code ?? error.message }));
    req.end();
  });
}

/** The NAT: READERS browsers at one address, each keeping its one connection between CLICKS clicks. */
async function nat(port, paths) {
  const result = tally();
  await Promise.all(
    Array.from({ length: READERS }, async (_, reader) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1, localAddress: NAT });
      await sleep((reader * 7) % 1000);
      for (let index = 0; index < CLICKS; index += 1) {
        if (index > 0) await sleep(200 + ((reader * 131 + index * 977) % 1200));
        const outcome = await click(agent, port, paths[(reader + index) % paths.length]);
        typeof outcome === 'object' ? result.add('reset', outcome.how) : result.add(outcome);
      }
      agent.destroy();
    }),
  );
  return result.counts;
}

/** The lone visitor: VISITS tries, each a new connection; the outcomes and the slowest answer. */
async function lone(port) {
  const result = tally();
  let slowestMs = 0;
  for (let attempt = 0; attempt < VISITS; attempt += 1) {
    const { outcome, ms } = await visit(port, VISITOR);
    result.add(outcome);
    if (outcome === 200) slowestMs = Math.max(slowestMs, ms);
    await sleep(100);
  }
  return { ...result.counts, slowestMs };
}

/** The service's RSS every 200 ms while `work` runs: the largest seen, in MiB. */
async function watchRss(pid, work) {
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  let largest = rss();
  const timer = setInterval(() => (largest = Math.max(largest, rss())), 200);
  try {
    return { result: await work(), largestRssMiB: Math.max(largest, rss()) };
  } finally {
    clearInterval(timer);
  }
}

/** The shed connections by reason, as /metrics counts them (none on a tree without the counter). */
async function shedCounts(adminPort) {
  const { received } = await visit(adminPort, HOST, '/metrics');
  const counts = {};
  for (const match of received.matchAll(/newsletter_bff_connections_shed_total\{reason="(\w+)"\} (\d+)/g))
    counts[match[1]] = Number(match[2]);
  return counts;
}

async function phase(name, server, paths, floodSize) {
  const flooder = floodSize > 0 ? flood(server.port, floodSize) : undefined;
  if (flooder) await sleep(1500); // the flood settles
  const openedBefore = flooder?.opened() ?? 0;
  const shedBefore = await shedCounts(server.adminPort);
  const readiness = new Map();
  let watching = true;
  const readinessWatch = (async () => {
    while (watching) {
      const { outcome } = await visit(server.adminPort, HOST, '/readyz');
      readiness.set(outcome, (readiness.get(outcome) ?? 0) + 1);
      await sleep(500);
    }
  })();
  const { result, largestRssMiB } = await watchRss(server.child.pid, () =>
    Promise.all([ssr(server.port, paths), nat(server.port, paths), lone(server.port)]),
  );
  watching = false;
  await readinessWatch;
  const shedAfter = await shedCounts(server.adminPort);
  const opened = (flooder?.opened() ?? 0) - openedBefore;
  flooder?.stop();
  const [ssrCounts, natCounts, visitorCounts] = result;
  const shed = Object.entries(shedAfter)
    .map(([reason, n]) => [reason, n - (shedBefore[reason] ?? 0)])
    .filter(([, n]) => n > 0)
    .map(([reason, n]) => `${reason} ${n.toLocaleString('en')}`)
    .join(', ');
  const readyz = [...readiness].map(([status, n]) => `${status}×${n}`).join(' ');
  const row = (client, c, extra = '') => [
    name,
    client,
    c.requests.toLocaleString('en'),
    c.ok.toLocaleString('en'),
    `${((c.ok / c.requests) * 100).toFixed(1)}%`,
    String(c.other),
    String(c.reset),
    String(c.hung),
    [extra, ...Object.entries(c.errors ?? {}).map(([how, n]) => `${how} ×${n}`)].filter(Boolean).join('; '),
  ];
  return [
    row(`SSR, ${BURSTS} bursts of ${BURST} (${SSR})`, ssrCounts),
    row(`NAT, ${READERS} readers × ${CLICKS} (${NAT})`, natCounts),
    row(`lone visitor (${VISITOR})`, visitorCounts, `slowest 200: ${Math.round(visitorCounts.slowestMs)} ms`),
    [
      name,
      'the service',
      '',
      '',
      '',
      '',
      '',
      '',
      `largest RSS ${largestRssMiB.toFixed(0)} MiB; /readyz ${readyz}; shed: ${shed || 'none'}${flooder ? `; flood connections opened ${opened.toLocaleString('en')}` : ''}`,
    ],
  ];
}

/** A raw kept-alive connection: writes, and what came back so far. */
async function rawConnection(port, localAddress = VISITOR) {
  const socket = connect({ host: HOST, port, localAddress, allowHalfOpen: true });
  let received = '';
  let error;
  let closed = false;
  socket.on('data', (chunk) => (received += chunk.toString('latin1')));
  socket.on('error', (e) => (error = e));
  socket.on('close', () => (closed = true));
  await new Promise((resolve) => socket.once('connect', resolve));
  return { socket, received: () => received, error: () => error, closed: () => closed };
}

/** Waits (at most `ms`) until `condition()` holds. */
async function waitFor(condition, ms) {
  const deadline = performance.now() + ms;
  while (!condition() && performance.now() < deadline) await sleep(10);
  return condition();
}

/** An early 413 on a kept-alive connection, then a GET on it: what the 413 said and what the GET got. */
async function afterTooLarge(port, label, head, body) {
  const client = await rawConnection(port);
  client.socket.write(head);
  client.socket.write(body, () => {});
  await waitFor(() => /\r\n\r\n/.test(client.received()), 5000);
  const answer = client.received();
  const saidClose = /\r\nconnection: close\r\n/i.test(answer);
  await sleep(300);
  let next;
  if (saidClose) {
    // Told the connection closes: a client sends nothing more and closes its side.
    client.socket.end();
    await waitFor(() => client.closed(), 5000);
    next = client.error() ? `the connection ended with ${client.error().code}` : 'the connection was closed cleanly, as it said';
  } else if (client.closed() || client.socket.destroyed) next = 'the connection was closed under the client';
  else {
    const before = client.received().length;
    client.socket.write(`GET /api/categories HTTP/1.1\r\nHost: ${HOST}\r\n\r\n`, () => {});
    await waitFor(() => client.received().length > before + 12 || client.closed(), 5000);
    const more = client.received().slice(before);
    next =
      more.length >= 12
        ? `the next request answered ${more.slice(9, 12)}`
        : client.error()
          ? `the next request: ${client.error().code}`
          : 'the next request: closed unanswered';
  }
  client.socket.destroy();
  return [label, answer.slice(9, 12), saidClose ? 'close' : 'keep-alive', next];
}

/** One kept-alive connection sends `posts` early-answered posts (403, then its 2-byte body) one after another (at most 60 s), then closes; another client's longest wait. */
async function stall(port, posts) {
  const poster = await rawConnection(port, SSR);
  let watching = true;
  let longestMs = 0;
  const watcher = (async () => {
    while (watching) {
      const { ms } = await visit(port, VISITOR);
      longestMs = Math.max(longestMs, ms);
      await sleep(50);
    }
  })();
  const head = `POST /api/subscribe HTTP/1.1\r\nHost: ${HOST}\r\nOrigin: https://evil.example\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n`;
  const startedAt = performance.now();
  const until = startedAt + 60_000;
  let sent = 1;
  let tail = '';
  // Each answer's status line: the body goes after it, and the next post with it while time is left.
  const finished = new Promise((resolve) => {
    poster.socket.on('data', (chunk) => {
      const text = tail + chunk.toString('latin1');
      const answers = text.split('HTTP/1.1 ').length - 1;
      tail = text.slice(-8);
      for (let index = 0; index < answers; index += 1) {
        if (sent < posts && performance.now() < until) {
          poster.socket.write(`{}${head}`);
          sent += 1;
        } else {
          poster.socket.write('{}');
          return resolve();
        }
      }
    });
    poster.socket.once('close', resolve);
  });
  poster.socket.write(head);
  await finished;
  const postingSeconds = (performance.now() - startedAt) / 1000;
  poster.socket.destroy();
  const closedAt = performance.now();
  await sleep(3000);
  watching = false;
  await watcher;
  return [
    `${sent.toLocaleString('en')} early-answered posts on one connection (${postingSeconds.toFixed(1)} s), then closing`,
    '',
    '',
    `another client's longest wait ${Math.round(longestMs)} ms (watched until ${Math.round(performance.now() - closedAt)} ms after the close)`,
  ];
}

const rows = [];
const single = [];
try {
  const server = await startServer();
  const listed = await (await fetch(`http://${HOST}:${server.port}/api/issues`)).json();
  const paths = ['/api/issues', '/api/categories', ...listed.data.slice(0, 8).map((issue) => `/api/issues/${issue.slug}`)];
  rows.push(...(await phase('nobody attacking', server, paths, 0)));
  await sleep(6000); // kept-alive connections of the first phase time out
  rows.push(...(await phase(`${FLOODER} holds ${FLOOD.toLocaleString('en')} slowloris sockets`, server, paths, FLOOD)));
  await sleep(3000);

  const post = (headers) => `POST /api/subscribe HTTP/1.1\r\nHost: ${HOST}\r\nContent-Type: application/json\r\n${headers}\r\n\r\n`;
  let chunkedBody = '';
  for (let index = 0; index < 100; index += 1) chunkedBody += `400\r\n${'x'.repeat(1024)}\r\n`;
  single.push(
    await afterTooLarge(
      server.port,
      '413, an oversized chunked body (100 KiB, sent whole)',
      post('Transfer-Encoding: chunked'),
      `${chunkedBody}0\r\n\r\n`,
    ),
  );
  single.push(
    await afterTooLarge(server.port, '413, Content-Length: 100000 (sent whole)', post('Content-Length: 100000'), 'x'.repeat(100_000)),
  );
  single.push(await stall(server.port, 5000));
  single.push(await stall(server.port, 20_000));
  for (const host of ['a b', 'a%41', '[::1']) {
    const client = await rawConnection(server.port);
    client.socket.write(`GET /api/categories HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    await waitFor(() => /\r\n\r\n/.test(client.received()) && (client.received().includes('}') || client.closed()), 2000);
    const answer = client.received();
    client.socket.destroy();
    const body = answer.slice(answer.indexOf('\r\n\r\n') + 4).replace(/^0\r\n\r\n$/, '(empty, chunked)');
    const security = /\r\nx-content-type-options: nosniff/i.test(answer) ? 'security headers' : 'no security headers';
    single.push([`Host: ${host}`, answer.slice(9, 12), '', `${body.slice(0, 90) || '(empty)'}; ${security}`]);
  }
  await stopChild(server.child);
} finally {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}
process.stdout.write(
  `A crowd at one address, an attacker at another (Node ${process.version}; ${new Date().toISOString()}${Object.keys(extraEnv).length ? `; ${JSON.stringify(extraEnv)}` : ''})\n` +
    `${table(['phase', 'client', 'requests', '200', 'share', 'other status', 'reset', 'hung', ''], rows, [false, false, true, true, true, true, true, true, false])}\n\n` +
    `One connection at a time\n${table(['case', 'status', 'Connection', 'then'], single, [false, false, false, false])}\n`,
);
