// Proves the Dockerfile without Docker (no engine or base images in CI): runs its stages'
// steps in fresh directories — COPY, RUN (npm from the lock file, offline where the cache
// has it), ENV, USER — then starts the runtime stage's CMD as the image would (production
// mode, a fake key, the upstream a loopback stub), asks it for an answer, runs its
// HEALTHCHECK, and stops it with SIGTERM. Everything on 127.0.0.1; bounded in time.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const scratch = mkdtempSync(join(tmpdir(), 'newsletter-bff-container-'));
chmodSync(scratch, 0o755);
const failures = [];
function check(name, condition) {
  console.log(`${condition ? 'ok  ' : 'FAIL'} ${name}`);
  if (!condition) failures.push(name);
}

/** The Dockerfile's instructions, continuation lines joined, comments dropped. */
function instructions(text) {
  return text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const [, keyword, rest] = /^(\S+)\s+(.*)$/.exec(line);
      return { keyword: keyword.toUpperCase(), rest };
    });
}

/** Runs the stages; returns the last one (the image) with its ENV, USER, HEALTHCHECK and CMD. */
function buildStages() {
  const args = {};
  const stages = new Map();
  let stage;
  for (const { keyword, rest } of instructions(readFileSync(join(root, 'Dockerfile'), 'utf8'))) {
    const expand = (text) => text.replace(/\$\{(\w+)\}/g, (_, name) => args[name] ?? '');
    if (keyword === 'ARG') {
      const [name, value] = rest.split('=');
      args[name] = value;
    } else if (keyword === 'FROM') {
      const [, name] = /\bAS\s+(\S+)/i.exec(rest) ?? [];
      stage = { name, base: expand(rest.split(/\s+/)[0]), dir: join(scratch, name ?? 'stage'), workdir: '/', env: {}, user: 'root' };
      mkdirSync(stage.dir, { recursive: true });
      stages.set(name, stage);
      console.log(`-- stage ${name} (${stage.base})`);
    } else if (keyword === 'WORKDIR') {
      stage.workdir = rest;
    } else if (keyword === 'ENV') {
      for (const [, name, value] of rest.matchAll(/(\w+)=(\S+)/g)) stage.env[name] = value;
    } else if (keyword === 'COPY') {
      const parts = rest.split(/\s+/);
      const from = parts[0].startsWith('--from=') ? stages.get(parts.shift().slice('--from='.length)) : undefined;
      const target = parts.pop();
      for (const source of parts) {
        const path = from ? join(from.dir, source.replace(new RegExp(`^${from.workdir}/?`), '')) : join(root, source);
        const destination = target.endsWith('/') ? join(stage.dir, target, source.split('/').pop()) : join(stage.dir, target);
        mkdirSync(dirname(destination), { recursive: true });
        cpSync(path, destination, { recursive: true });
      }
    } else if (keyword === 'RUN') {
      // A `--mount=type=cache` is BuildKit's; here npm uses the machine's cache directly.
      const command = rest.replace(/^(--mount=\S+\s+)+/, '');
      if (/\bnpm cache clean\b/.test(command)) throw new Error("RUN cleans the npm cache: here that would be the machine's own cache");
      console.log(`$ ${command}`);
      // npm reads the packages from the cache that `npm ci` of the repository filled.
      execFileSync('bash', ['-c', command], {
        cwd: stage.dir,
        stdio: 'inherit',
        env: { ...process.env, npm_config_prefer_offline: 'true', ...stage.env },
      });
    } else if (keyword === 'USER') {
      stage.user = rest;
    } else if (keyword === 'HEALTHCHECK') {
      stage.healthcheck = JSON.parse(rest.slice(rest.indexOf('CMD') + 3));
    } else if (keyword === 'CMD') {
      stage.cmd = JSON.parse(rest);
    }
  }
  return stage;
}

async function listen(server) {
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server.address().port;
}
function canConnect(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}
async function freePort() {
  const probe = createServer();
  const port = await listen(probe);
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

// The categories, and the archive they are counted in (empty: each category counts 0 issues).
const upstream = createServer((request, response) => {
  const path = new URL(request.url ?? '/', 'http://stub').pathname;
  const body =
    path === '/v1/newsletter/categories'
      ? { ok: true, data: [{ id: 'c1', name: 'Essays', slug: 'essays' }] }
      : path === '/v1/newsletter/issues'
        ? { ok: true, data: [] }
        : undefined;
  response.writeHead(body ? 200 : 404, { 'Content-Type': 'application/json' });
  response.end(JSON.stringify(body ?? { ok: false }));
});
let child;
let redis;
try {
  const image = buildStages();
  check(`the image runs as a user other than root (${image.user})`, image.user !== 'root' && image.user !== '0');
  check('the image sets NODE_ENV=production', image.env.NODE_ENV === 'production');
  const modules = readdirSync(join(image.dir, 'node_modules'));
  const { dependencies, optionalDependencies, peerDependencies, devDependencies } = JSON.parse(
    readFileSync(join(image.dir, 'package.json'), 'utf8'),
  );
  check(
    'the image has the production dependencies',
    Object.keys(dependencies).every((name) => existsSync(join(image.dir, 'node_modules', name))),
  );
  // Redis, Prometheus and the throwaway-domain list are optional dependencies: `npm ci --omit=dev`
  // installs them, so the image can serve ADMIN_PORT (its HEALTHCHECK), REDIS_URL and
  // SUBSCRIBE_BLOCK_DISPOSABLE.
  const extras = Object.keys(optionalDependencies);
  check(
    `the image has the optional extras (${extras.join(', ')})`,
    extras.every((name) => existsSync(join(image.dir, 'node_modules', name))),
  );
  // sanitize-html is for `npm run site:build` only, an optional peer the image leaves out.
  check(
    'the image has no optional peer (sanitize-html)',
    !Object.keys(peerDependencies).some((name) => existsSync(join(image.dir, 'node_modules', name))),
  );
  // The lock file marks what only development needs (`dev: true`); a dev dependency that a
  // production one also uses would rightly be there.
  const { packages: locked } = JSON.parse(readFileSync(join(image.dir, 'package-lock.json'), 'utf8'));
  const devOnly = Object.keys(devDependencies).filter((name) => locked[`node_modules/${name}`]?.dev === true);
  check('the image has no dev-only dependency', !devOnly.some((name) => existsSync(join(image.dir, 'node_modules', name))));
  check('the image has no TypeScript sources', !existsSync(join(image.dir, 'src')));
  console.log(`image: ${modules.length} entries in node_modules`);

  const upstreamPort = await listen(upstream);
  // With redis-server on the machine (.ci/run installs it), the image also runs with REDIS_URL.
  const redisPort = spawnSync('redis-server', ['--version']).status === 0 ? await freePort() : undefined;
  if (redisPort !== undefined) {
    redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    const ready = Date.now() + 5_000;
    while (Date.now() < ready && !(await canConnect(redisPort))) await new Promise((resolve) => setTimeout(resolve, 50));
  } else {
    console.log('skip REDIS_URL: redis-server is not installed');
  }
  const env = {
    PATH: process.env.PATH,
    ...image.env,
    // Loopback only in CI; the image listens on 0.0.0.0.
    HOST: '127.0.0.1',
    PORT: String(await freePort()),
    ADMIN_PORT: String(await freePort()),
    NEWSLETTER_API_KEY: 'fake-container-key-0c4e9a71',
    NEWSLETTER_API_BASE_URL: `http://127.0.0.1:${upstreamPort}/v1`,
    ...(redisPort !== undefined && { REDIS_URL: `redis://127.0.0.1:${redisPort}` }),
    SUBSCRIBE_BLOCK_DISPOSABLE: 'true',
  };
  // As an unprivileged user when this runs as root (`nobody` stands in for the image's `node`);
  // setpriv execs in place, so SIGTERM reaches node itself.
  const asUser =
    process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0
      ? ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups', '--']
      : [];
  const [command, ...args] = [...asUser, ...image.cmd];
  child = spawn(command, args, { cwd: image.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const deadline = Date.now() + 30_000;
  while (!output.includes('listening on') && child.exitCode === null && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 100));
  check(
    `CMD ${image.cmd.join(' ')} starts with the real upstream, not in demo mode`,
    output.includes('listening on') && !output.includes('DEMO MODE'),
  );
  if (!output.includes('listening on')) console.error(output.slice(-2000));
  if (redisPort !== undefined) {
    const connected = Date.now() + 5_000;
    while (!output.includes('"event":"redis_connected"') && Date.now() < connected) await new Promise((resolve) => setTimeout(resolve, 50));
    check("REDIS_URL connects with the image's @redis/client", output.includes('"event":"redis_connected"'));
  }
  const categories = await fetch(`http://127.0.0.1:${env.PORT}/api/categories`).catch(() => undefined);
  check(
    'GET /api/categories → 200 from the stub upstream',
    categories?.status === 200 &&
      JSON.stringify((await categories.json()).data) === JSON.stringify([{ name: 'Essays', slug: 'essays', count: 0 }]),
  );
  const throwaway = await fetch(`http://127.0.0.1:${env.PORT}/api/subscribe`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ email: 'someone@mailinator.com', optInAttestation: true }),
  }).catch(() => undefined);
  check("SUBSCRIBE_BLOCK_DISPOSABLE refuses a throwaway address with the image's mailchecker (422)", throwaway?.status === 422);
  const health = spawnSync(image.healthcheck[0], image.healthcheck.slice(1), { cwd: image.dir, env, timeout: 10_000 });
  if (
    readdirSync(join(image.dir, 'dist'), { recursive: true }).some(
      (file) => String(file).endsWith('.js') && readFileSync(join(image.dir, 'dist', String(file)), 'utf8').includes('ADMIN_PORT'),
    )
  ) {
    check('HEALTHCHECK passes against the admin listener', health.status === 0);
  } else {
    console.log(`skip HEALTHCHECK (exit ${health.status}): this build has no admin listener on ADMIN_PORT yet`);
  }
  child.kill('SIGTERM');
  const code = await Promise.race([
    new Promise((resolve) => child.once('exit', (exitCode) => resolve(exitCode))),
    new Promise((resolve) => setTimeout(() => resolve('timeout'), 15_000)),
  ]);
  check(`SIGTERM stops it with exit code 0 (${code})`, code === 0);
} finally {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  redis?.kill('SIGKILL');
  upstream.close();
  rmSync(scratch, { recursive: true, force: true });
}
if (failures.length > 0) {
  console.error(`${failures.length} container recipe check(s) failed`);
  process.exit(1);
}
console.log('container recipe passed');
