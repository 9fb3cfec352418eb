// One client holding the listener: a flooder on 127.0.0.1 keeps FLOOD sockets open (half idle,
// half slowloris: a request head begun and never ended), reopening any the server closes, while a
// visitor on 127.0.0.2 tries TRIES times, each on a new connection, to GET /api/categories. Prints
// how many tries were answered 200 (within 2 s each) and what /readyz said during the flood.
//   npm run build && node bench/connection-flood.mjs
// Scenarios: the defaults (MAX_CONNECTIONS 1024) with 1,100 sockets, and MAX_CONNECTIONS=16 with
// 40; each with the per-client cap as configured by default, and with it set to MAX_CONNECTIONS
// (no per-client cap: how the listener behaved before it had one). Demo mode (NODE_ENV unset, so
// no key is needed); everything on loopback; every wait bounded (the flooder reopens at most
// 500 times per socket); about a minute.
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { children, freePort, stopChild } from './lib/processes.mjs';
import { HOST, root } from './lib/settings.mjs';
import { sleep, table } from './lib/stats.mjs';

const FLOODER = '127.0.0.1';
const VISITOR = '127.0.0.2';
const TRIES = 60;
const TRY_TIMEOUT_MS = 2000;

async function startServer(extraEnv) {
  const port = await freePort();
  const adminPort = await freePort();
  const child = spawn(process.execPath, ['dist/cli.js'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOST, PORT: String(port), ADMIN_PORT: String(adminPort), ...extraEnv },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.add(child);
  for (let attempt = 0; attempt < 100; attempt += 1) {
    if ((await visit(port, HOST)) === 200) return { child, port, adminPort };
    await sleep(100);
  }
  throw new Error('the server did not answer within 10 s');
}

/** One GET on a new connection from `localAddress`: its status, or 0 (refused, reset, or no answer in time). */
function visit(port, localAddress, path = '/api/categories', targetPort = port) {
  return new Promise((resolve) => {
    let received = '';
    const socket = connect({ host: HOST, port: targetPort, localAddress });
    const done = (status) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(status);
    };
    const timer = setTimeout(() => done(0), TRY_TIMEOUT_MS);
    socket.on('connect', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: ${HOST}:${port}\r\nConnection: close\r\n\r\n`));
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (received.length >= 12) done(Number(received.slice(9, 12)));
    });
    socket.on('error', () => done(0));
    socket.on('close', () => done(received.length >= 12 ? Number(received.slice(9, 12)) : 0));
  });
}

/** Keeps `count` sockets from FLOODER open, reopening each the server closes, until stopped. */
function flood(port, count) {
  const sockets = new Set();
  let stopped = false;
  let opened = 0;
  const open = (index) => {
    if (stopped || opened >= count * 500) return;
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
  for (let index = 0; index < count; index += 1) open(index);
  return {
    opened: () => opened,
    stop() {
      stopped = true;
      for (const socket of sockets) socket.destroy();
    },
  };
}

async function scenario(name, env, floodCount) {
  const server = await startServer(env);
  const flooder = flood(server.port, floodCount);
  await sleep(1500); // the flood settles
  const openedBefore = flooder.opened();
  let served = 0;
  const readiness = new Map();
  for (let attempt = 0; attempt < TRIES; attempt += 1) {
    if ((await visit(server.port, VISITOR)) === 200) served += 1;
    if (attempt % 10 === 0) {
      const ready = await visit(server.port, HOST, '/readyz', server.adminPort);
      readiness.set(ready, (readiness.get(ready) ?? 0) + 1);
    }
    await sleep(50);
  }
  const opened = flooder.opened() - openedBefore;
  flooder.stop();
  await stopChild(server.child);
  return [
    name,
    String(floodCount),
    opened.toLocaleString('en'),
    `${served} / ${TRIES}`,
    `${Math.round((served / TRIES) * 100)}%`,
    [...readiness].map(([status, n]) => `${status || 'none'}×${n}`).join(' '),
  ];
}

const rows = [];
try {
  rows.push(await scenario('defaults (MAX_CONNECTIONS 1024, per client 64)', {}, 1100));
  rows.push(await scenario('defaults, no per-client cap (per client = 1024)', { MAX_CONNECTIONS_PER_CLIENT: '1024' }, 1100));
  rows.push(await scenario('MAX_CONNECTIONS=16 (per client 4)', { MAX_CONNECTIONS: '16' }, 40));
  rows.push(await scenario('MAX_CONNECTIONS=16, no per-client cap', { MAX_CONNECTIONS: '16', MAX_CONNECTIONS_PER_CLIENT: '16' }, 40));
} finally {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}
process.stdout.write(
  `One address flooding, another visiting (${TRIES} tries, each a new connection, ${TRY_TIMEOUT_MS} ms each; Node ${process.version}; ${new Date().toISOString()})\n` +
    `${table(['scenario', 'flood sockets', 'flood connections opened while visiting', 'visitor served', 'share', '/readyz during the flood'], rows, [false, true, true, true, true, false])}\n`,
);
