import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importOptional, MissingPackageError } from '../src/node/optional-package.js';
import { freeLoopbackPort, waitForOutput } from './spawned.js';

/**
 * The core needs only hono, @hono/node-server, zod and lru-cache at run time; Redis, Prometheus
 * and the site builder's sanitiser load only when configured or used (docs/dependencies.md).
 * Proven twice: on the compiled graph of static imports, and by running the built command in a
 * folder whose node_modules holds the four core packages and nothing else.
 */
const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');
const CORE = ['@hono/node-server', 'hono', 'lru-cache', 'zod'];
const OPTIONAL = ['@redis/client', 'astro', 'mailchecker', 'prom-client', 'sanitize-html'];
/** The folders of the features that load only when configured or used. */
const OPTIONAL_FOLDERS = /^(node\/admin|node\/redis|tools\/site)\//;
const packageJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, Record<string, string>>;

/** The package a bare specifier names (`@hono/node-server/conninfo` → `@hono/node-server`). */
const packageOf = (specifier: string) =>
  specifier
    .split('/')
    .slice(0, specifier.startsWith('@') ? 2 : 1)
    .join('/');

/**
 * Every file and bare package reachable from `entry` through static imports and re-exports
 * (compiled JavaScript: type-only imports are gone). A dynamic `import()` is not followed.
 */
function staticGraph(entry: string) {
  const files = new Set<string>();
  const packages = new Set<string>();
  const queue = [entry];
  // Bounded: each compiled file is read once.
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    if (files.has(file)) continue;
    files.add(file);
    const source = readFileSync(file, 'utf8');
    for (const [, specifier] of source.matchAll(/^\s*(?:import|export)\s(?:[^'"]*?\sfrom\s)?['"]([^'"]+)['"]/gm)) {
      if (specifier!.startsWith('.')) queue.push(join(dirname(file), specifier!));
      else if (!specifier!.startsWith('node:')) packages.add(packageOf(specifier!));
    }
  }
  return { files: [...files].map((file) => relative(dist, file)), packages: [...packages].sort() };
}

describe('the core graph', () => {
  it('names as runtime dependencies the four core packages only; the extras are optional', () => {
    expect(Object.keys(packageJson.dependencies!).sort()).toEqual(CORE);
    expect(Object.keys({ ...packageJson.optionalDependencies, ...packageJson.peerDependencies }).sort()).toEqual(OPTIONAL);
  });

  it.each(['cli.js', 'core/app.js', 'worker.js', 'node.js'])('reaches no optional package through static imports from dist/%s', (entry) => {
    const graph = staticGraph(join(dist, entry));
    expect(graph.packages.filter((name) => !CORE.includes(name))).toEqual([]);
    expect(graph.files.filter((file) => OPTIONAL_FOLDERS.test(file))).toEqual([]);
  });

  it.each(['cli.js', 'core/app.js', 'worker.js', 'node.js'])(
    "reaches neither the openapi.json generator nor the public shapes' schemas from dist/%s",
    (entry) => {
      // The service imports only the shapes' types: the schemas, and what zod needs for them, stay out of the Worker.
      expect(
        staticGraph(join(dist, entry)).files.filter((file) => file.startsWith('tools/openapi/') || file === 'core/public-shapes.js'),
      ).toEqual([]);
    },
  );

  it('reaches through static imports from dist/integrations/astro.js (newsletter-bff/astro) no package but the core: neither Astro nor the sanitiser', () => {
    const graph = staticGraph(join(dist, 'integrations/astro.js'));
    expect(graph.packages.filter((name) => !CORE.includes(name))).toEqual([]);
    expect(graph.files.filter((file) => file.includes('sanitize'))).toEqual([]);
  });

  it('does see an optional package where a feature imports it statically (the walk finds what it looks for)', () => {
    expect(staticGraph(join(dist, 'node/admin/admin.js')).packages).toContain('prom-client');
    expect(staticGraph(join(dist, 'node/redis/services.js')).packages).toContain('@redis/client');
    expect(staticGraph(join(dist, 'tools/site/build.js')).packages).toContain('sanitize-html');
    // The folders' names are the tree's (a file moved out of them would no longer be looked for).
    for (const feature of ['node/admin/admin.js', 'node/redis/services.js', 'tools/site/build.js']) {
      expect(
        staticGraph(join(dist, feature)).files.filter((file) => OPTIONAL_FOLDERS.test(file)),
        feature,
      ).toContain(feature);
    }
    expect(staticGraph(join(dist, 'tools/openapi/main.js')).files).toContain('core/public-shapes.js');
  });
});

describe('importOptional', () => {
  const notFound = (name: string) =>
    Object.assign(new Error(`Cannot find package '${name}' imported from /app/dist/node/admin/prometheus.js`), {
      code: 'ERR_MODULE_NOT_FOUND',
    });

  it('returns what the import gives', async () => {
    await expect(importOptional('prom-client', 'ADMIN_PORT', async () => ({ ok: 1 }))).resolves.toEqual({ ok: 1 });
  });

  it('turns the named package not found into one sentence naming the feature and the install command', async () => {
    const error = await importOptional('prom-client', 'ADMIN_PORT', () => Promise.reject(notFound('prom-client'))).catch(
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(MissingPackageError);
    expect((error as Error).message).toBe(
      'ADMIN_PORT needs the package prom-client, which is not installed: run `npm install prom-client`',
    );
  });

  it('throws any other failure as it was, a missing dependency of the package included', async () => {
    const other = notFound('tdigest');
    await expect(importOptional('prom-client', 'ADMIN_PORT', () => Promise.reject(other))).rejects.toBe(other);
    const broken = new SyntaxError('Unexpected token');
    await expect(importOptional('prom-client', 'ADMIN_PORT', () => Promise.reject(broken))).rejects.toBe(broken);
  });
});

describe('the built command with only the core packages installed', () => {
  let scratch: string;

  beforeAll(() => {
    // A copy, not a link: Node resolves packages from a file's real path, and ours sees every extra.
    scratch = mkdtempSync(join(tmpdir(), 'newsletter-bff-core-'));
    cpSync(dist, join(scratch, 'dist'), { recursive: true });
    // What the command reads of examples/ (the demo's site, the form snippet), as the package ships them:
    // not examples/astro, whose own node_modules is no part of the package.
    cpSync(join(root, 'examples', 'site'), join(scratch, 'examples', 'site'), { recursive: true });
    cpSync(join(root, 'examples', 'subscribe-form.html'), join(scratch, 'examples', 'subscribe-form.html'));
    writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'core-only', version: '0.0.0', type: 'module' }));
    for (const name of CORE) {
      mkdirSync(dirname(join(scratch, 'node_modules', name)), { recursive: true });
      symlinkSync(join(root, 'node_modules', name), join(scratch, 'node_modules', name), 'dir');
    }
  });

  afterAll(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  function run(file: string, args: string[], env: Record<string, string>) {
    const child = spawn(process.execPath, [join(scratch, 'dist', file), ...args], {
      cwd: scratch,
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', ...env },
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    return { child, exited, stderr: () => stderr };
  }

  it('has none of the extras to find', async () => {
    const probe = run('cli.js', ['--version'], {});
    expect(await probe.exited).toBe(0);
    const importsFromDist = (name: string) => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', `await import(${JSON.stringify(name)})`], {
        cwd: join(scratch, 'dist'),
      });
      return new Promise((done) => child.on('exit', done));
    };
    expect(await importsFromDist('hono')).toBe(0);
    for (const name of OPTIONAL) expect(await importsFromDist(name), name).not.toBe(0);
  });

  it('starts demo mode and serves the four routes', async () => {
    const port = await freeLoopbackPort();
    const server = run('cli.js', ['start'], { PORT: String(port) });
    try {
      await waitForOutput(server.child, 'listening on', 15_000);
      for (const path of ['/api/issues?limit=1', '/api/categories']) {
        const response = await fetch(`http://127.0.0.1:${port}${path}`);
        expect(response.status, path).toBe(200);
      }
      const first = ((await (await fetch(`http://127.0.0.1:${port}/api/issues?limit=1`)).json()) as { data: { slug: string }[] }).data[0]!;
      expect((await fetch(`http://127.0.0.1:${port}/api/issues/${first.slug}`)).status).toBe(200);
      const subscribe = await fetch(`http://127.0.0.1:${port}/api/subscribe`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Origin: `http://127.0.0.1:${port}` },
        body: JSON.stringify({ email: 'reader@example.com' }),
      });
      expect(subscribe.status).toBeLessThan(500);
      expect(server.stderr()).toBe('');
    } finally {
      server.child.kill('SIGKILL');
    }
  });

  it.each([
    ['ADMIN_PORT', 'prom-client'],
    ['REDIS_URL', '@redis/client'],
  ])('exits 1 with one line naming the package when %s is set without it', async (variable, packageName) => {
    const setting = variable === 'ADMIN_PORT' ? String(await freeLoopbackPort()) : 'redis://127.0.0.1:1';
    const server = run('cli.js', ['start'], { PORT: String(await freeLoopbackPort()), [variable]: setting });
    expect(await server.exited).toBe(1);
    expect(server.stderr()).toBe(
      `newsletter-bff did not start: ${variable} ${variable === 'ADMIN_PORT' ? "(the admin listener's /metrics)" : '(state shared by several instances)'} needs the package ${packageName}, which is not installed: run \`npm install ${packageName}\`\n`,
    );
  });

  it('exits 1 with one line naming mailchecker when SUBSCRIBE_BLOCK_DISPOSABLE is on without it', async () => {
    const server = run('cli.js', ['start'], { PORT: String(await freeLoopbackPort()), SUBSCRIBE_BLOCK_DISPOSABLE: 'true' });
    expect(await server.exited).toBe(1);
    expect(server.stderr()).toBe(
      'newsletter-bff did not start: SUBSCRIBE_BLOCK_DISPOSABLE=true needs the package mailchecker, which is not installed: run `npm install mailchecker`\n',
    );
  });

  it('fails the site build with one line naming sanitize-html, before reading anything', async () => {
    const build = run(
      'tools/site/main.js',
      ['--api', 'http://127.0.0.1:1', '--site-url', 'https://news.example.com/', '--out', join(scratch, 'site')],
      {},
    );
    expect(await build.exited).toBe(1);
    expect(build.stderr()).toBe(
      'site build failed: npm run site:build (it sanitises each letter) needs the package sanitize-html, which is not installed: run `npm install sanitize-html`\n',
    );
  });
});
