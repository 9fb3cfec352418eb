import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisServerAvailable, startRedisServer } from './redis/support.js';
import { freeLoopbackPort, waitForOutput } from './spawned.js';

/**
 * The package as a user gets it: `npm pack` of the built dist/ (test/build-dist.ts), installed
 * into a throw-away ES module project made with `tsc --init`. Offline throughout: the project's
 * lock file takes each dependency's tarball and integrity from ours, so `npm ci --offline`
 * finds them in the npm cache that our own `npm ci` filled — no registry call, no network.
 */
const root = fileURLToPath(new URL('..', import.meta.url));
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const ownPackage = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as PackageJson;
const ownLock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };

interface PackageJson {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  optionalDependencies: Record<string, string>;
  [field: string]: unknown;
}
interface LockEntry {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  [field: string]: unknown;
}

const NPM_QUIET = { npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

function exec(file: string, args: string[], cwd: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(file, args, { cwd, env: { ...process.env, ...NPM_QUIET }, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** The consumer's lock: our tarball, and our locked entry of every package it depends on. */
function consumerLock(tarball: string) {
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`;
  const { name, version, license, bin, engines, dependencies, optionalDependencies, peerDependencies, peerDependenciesMeta } = ownPackage;
  const packages: Record<string, unknown> = {
    '': { name: 'consumer', dependencies: { [name]: `file:${tarball}` } },
    [`node_modules/${name}`]: {
      version,
      resolved: `file:${tarball}`,
      integrity,
      license,
      bin,
      engines,
      dependencies,
      optionalDependencies,
      peerDependencies,
      peerDependenciesMeta,
    },
  };
  // Bounded by the lock: each package is visited once. The optional extras come too, as npm installs them by default.
  const queue = Object.keys({ ...dependencies, ...optionalDependencies });
  for (let dependency = queue.shift(); dependency !== undefined; dependency = queue.shift()) {
    const key = `node_modules/${dependency}`;
    if (key in packages) continue;
    const entry = ownLock.packages[key];
    if (!entry) throw new Error(`${dependency} is not in package-lock.json`);
    packages[key] = entry;
    queue.push(...Object.keys({ ...entry.dependencies, ...entry.optionalDependencies }));
  }
  return { name: 'consumer', lockfileVersion: 3, requires: true, packages };
}

/** The typed-client snippet of docs/architecture.md, verbatim. */
function typedClientSnippet(): string {
  const guide = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8');
  const section = guide.slice(guide.indexOf('## Typed client'));
  const snippet = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (!snippet) throw new Error('docs/architecture.md has no typed-client snippet');
  return snippet;
}

/** Typechecks the consumer project with `file` (these lines) added for the moment. */
async function typecheckWith(file: string, lines: string[]) {
  writeFileSync(join(consumer, file), `${lines.join('\n')}\n`);
  try {
    return await exec(process.execPath, [tsc, '--noEmit', '-p', '.'], consumer);
  } finally {
    rmSync(join(consumer, file));
  }
}

let scratch: string;
let consumer: string;
let packed: { files: { path: string }[]; size: number; entryCount: number };

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'newsletter-bff-package-'));
  // dist/ is already built: no prepack rebuild under a running test suite.
  const pack = await exec('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', scratch], root);
  if (pack.code !== 0) throw new Error(`npm pack failed: ${pack.stderr}`);
  const [result] = JSON.parse(pack.stdout) as (typeof packed & { filename: string })[];
  packed = result!;
  const tarball = join(scratch, result!.filename);

  consumer = join(scratch, 'consumer');
  const dependencies = { [ownPackage.name]: `file:${tarball}` };
  mkdirSync(consumer);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module', dependencies }, null, 2));
  writeFileSync(join(consumer, 'package-lock.json'), JSON.stringify(consumerLock(tarball), null, 2));
  const install = await exec('npm', ['ci', '--offline', '--ignore-scripts'], consumer);
  if (install.code !== 0) throw new Error(`offline install failed: ${install.stderr}`);
  const init = await exec(process.execPath, [tsc, '--init'], consumer);
  if (init.code !== 0) throw new Error(`tsc --init failed: ${init.stdout}`);
}, 90_000);

// Two installed projects: removing them took over 10 s on a loaded 2-core machine.
afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}, 60_000);

describe('the npm package', () => {
  it('holds compiled JavaScript, declarations, the demo site, the form snippet, the Astro component and the OpenAPI document, and no sources or maps', () => {
    const paths = packed.files.map((file) => file.path);
    for (const path of paths) {
      expect(path).toMatch(
        /^(dist\/.+\.(js|d\.ts)|examples\/site\/.+|examples\/subscribe-form\.html|examples\/astro\/src\/components\/SubscribeForm\.astro|openapi\.json|LICENSE|README\.md|package\.json)$/,
      );
    }
    expect(paths).toEqual(
      expect.arrayContaining(['dist/cli.js', 'dist/client.js', 'dist/client.d.ts', 'dist/core/app.d.ts', 'openapi.json', 'LICENSE']),
    );
    expect(paths).toEqual(
      expect.arrayContaining([
        'examples/site/index.html',
        'examples/subscribe-form.html',
        'examples/astro/src/components/SubscribeForm.astro',
        'dist/integrations/astro.js',
        'dist/integrations/astro.d.ts',
        'dist/tools/site/sanitize.js',
      ]),
    );
  });

  it('exports the form snippet, the Astro component and the form script under their own names', async () => {
    const names = ['newsletter-bff/subscribe-form.html', 'newsletter-bff/astro/SubscribeForm.astro', 'newsletter-bff/subscribe.js'];
    const script = `for (const name of ${JSON.stringify(names)}) console.log(import.meta.resolve(name));`;
    const resolved = await exec(process.execPath, ['--input-type=module', '-e', script], consumer);
    expect(resolved.stderr).toBe('');
    expect(
      resolved.stdout
        .trim()
        .split('\n')
        .map((url) => url.slice(url.indexOf('/node_modules/'))),
    ).toEqual([
      '/node_modules/newsletter-bff/examples/subscribe-form.html',
      '/node_modules/newsletter-bff/examples/astro/src/components/SubscribeForm.astro',
      '/node_modules/newsletter-bff/examples/site/subscribe.js',
    ]);
  });

  it('loads newsletter-bff/astro in plain Node, with Astro not installed, and newsletter-bff/sanitize names sanitize-html when it is missing', async () => {
    const script = [
      "const { newsletterLoader } = await import('newsletter-bff/astro');",
      "const loader = newsletterLoader({ url: 'https://news-api.example.com' });",
      'console.log(loader.name, typeof loader.load);',
      "await import('newsletter-bff/sanitize').catch((error) => console.log(error.code, error.message.includes(\"'sanitize-html'\")));",
    ].join('\n');
    const run = await exec(process.execPath, ['--input-type=module', '-e', script], consumer);
    expect(readdirSync(join(consumer, 'node_modules'))).not.toContain('astro');
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('newsletter-bff function\nERR_MODULE_NOT_FOUND true\n');
  });

  it('typechecks a site’s own code there: the Astro loader, the sanitiser and a typed error status', async () => {
    const lines = [
      "import { hc } from 'hono/client';",
      "import type { AppType } from 'newsletter-bff/client';",
      "import { newsletterLoader, type NewsletterIssueData } from 'newsletter-bff/astro';",
      "import { sanitizeLetter, withoutLeadingTitle } from 'newsletter-bff/sanitize';",
      'export const loader = newsletterLoader({',
      "  url: 'https://news-api.example.com',",
      '  sanitize: (html: string, issue: NewsletterIssueData) => withoutLeadingTitle(sanitizeLetter(html), issue.subject),',
      '});',
      "const bff = hc<AppType>('https://news-api.example.com');",
      "const res = await bff.api.issues[':slug'].$get({ param: { slug: 'planning-next-years-plot' } });",
      'if (res.status === 404) {',
      "  const code: 'NOT_FOUND' = (await res.json()).error.code;",
      '  void code;',
      '} else if (res.status === 200) {',
      '  const html: string | null = (await res.json()).data.contentHtml;',
      '  void html;',
      '}',
    ];
    const check = await typecheckWith('site.ts', lines);
    expect(check.stdout + check.stderr).toBe('');
    expect(check.code).toBe(0);
    // A status the route never answers does not compile: the types say which errors exist.
    const wrong = await typecheckWith('wrong-status.ts', [
      ...lines.slice(0, 3).filter((line) => !line.includes('newsletter-bff/astro')),
      ...lines.slice(8, 10),
      'if (res.status === 429) console.log(res);',
    ]);
    expect(wrong.stdout).toMatch(/^wrong-status\.ts\(\d+,\d+\): error TS2367: /m);
  });

  it('typechecks the typed-client snippet of docs/architecture.md in a `tsc --init` project, against the package’s declarations', async () => {
    writeFileSync(join(consumer, 'index.ts'), typedClientSnippet());
    const check = await exec(process.execPath, [tsc, '--noEmit', '-p', '.'], consumer);
    expect(check.stdout + check.stderr).toBe('');
    expect(check.code).toBe(0);
    // Our declarations stand on their own: they pass with the consumer's library checks on too.
    const strict = await exec(process.execPath, [tsc, '--noEmit', '-p', '.', '--skipLibCheck', 'false'], consumer);
    expect(strict.stdout + strict.stderr).toBe('');
  });

  it('exports the public shapes from newsletter-bff/client, as the service defines them', async () => {
    const check = await typecheckWith('shapes.ts', [
      "import type { ArchivePageBody, CategoriesBody, CategoryListing, ErrorBody, IssueBody, IssueDetail, IssueNeighbour, IssueSummary, PublicCategory, SubscribeBody } from 'newsletter-bff/client';",
      "const category: PublicCategory = { name: 'Essays', slug: 'essays' };",
      'const listing: CategoryListing = { ...category, count: 1 };',
      "const summary: IssueSummary = { slug: 'a', subject: 'A', previewText: null, thumbnailUrl: null, sentAt: null, updatedAt: null, category, readingMinutes: null };",
      "const older: IssueNeighbour = { slug: 'b', subject: 'B', sentAt: null };",
      'const detail: IssueDetail = { ...summary, readingMinutes: 3, contentHtml: null, newer: null, older };',
      'export const bodies: [ArchivePageBody, IssueBody, CategoriesBody, SubscribeBody, ErrorBody] = [',
      '  { ok: true, data: [summary], meta: { total: 1, limit: 20, offset: 0, nextOffset: null, previousOffset: null } },',
      '  { ok: true, data: detail },',
      '  { ok: true, data: [listing] },',
      '  { ok: true, data: { accepted: true } },',
      "  { ok: false, error: { code: 'NOT_FOUND', message: 'Not found.' } },",
      '];',
    ]);
    expect(check.stdout + check.stderr).toBe('');
  });

  it('types the client for real there: a wrong parameter or body shape fails the consumer’s typecheck', async () => {
    const check = await typecheckWith('misuse.ts', [
      "import { hc } from 'hono/client';",
      "import type { AppType } from 'newsletter-bff/client';",
      "const bff = hc<AppType>('https://news-api.example.com');",
      "await bff.api.issues[':slug'].$get({ param: { id: 'x' } });",
      'const res = await bff.api.categories.$get();',
      'if (res.status === 200) { const names: number[] = (await res.json()).data; void names; }',
    ]);
    expect(check.code).not.toBe(0);
    expect(check.stdout).toMatch(/^misuse\.ts\(4,\d+\): error TS2353: .*'id' does not exist/m);
    expect(check.stdout).toMatch(/^misuse\.ts\(6,\d+\): error TS2322: /m);
  });

  it('starts demo mode with `npx newsletter-bff` from the installed package, its example site included', async () => {
    const port = await freeLoopbackPort();
    const server = startInstalled(consumer, { PORT: String(port) });
    try {
      const stdout = await waitForOutput(server, 'listening on', 20_000);
      expect(stdout).toContain('DEMO MODE');
      const archive = await fetch(`http://127.0.0.1:${port}/api/issues?limit=1`);
      expect(archive.status).toBe(200);
      expect(((await archive.json()) as { data: unknown[] }).data).toHaveLength(1);
      const site = await fetch(`http://127.0.0.1:${port}/`);
      expect(site.status).toBe(200);
      expect(site.headers.get('content-type')).toMatch(/^text\/html/);
    } finally {
      stopInstalled(server);
    }
  });

  it('serves /metrics on ADMIN_PORT with prom-client, an optional dependency npm installs by default', async () => {
    const [port, adminPort] = [await freeLoopbackPort(), await freeLoopbackPort()];
    const server = startInstalled(consumer, { PORT: String(port), ADMIN_PORT: String(adminPort) });
    try {
      await waitForOutput(server, 'admin (/healthz, /readyz, /metrics)', 20_000);
      const metrics = await fetch(`http://127.0.0.1:${adminPort}/metrics`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toMatch(/^# TYPE newsletter_bff_http_requests_total counter$/m);
    } finally {
      stopInstalled(server);
    }
  });

  it.runIf(redisServerAvailable())('connects to REDIS_URL with @redis/client, an optional dependency npm installs by default', async () => {
    const redis = await startRedisServer();
    const port = await freeLoopbackPort();
    const server = startInstalled(consumer, { PORT: String(port), REDIS_URL: redis.url });
    try {
      await waitForOutput(server, '"event":"redis_connected"', 20_000);
      expect((await fetch(`http://127.0.0.1:${port}/api/categories`)).status).toBe(200);
    } finally {
      stopInstalled(server);
      await redis.stop();
    }
  });

  it('refuses a throwaway address with SUBSCRIBE_BLOCK_DISPOSABLE, with mailchecker, an optional dependency npm installs by default', async () => {
    const port = await freeLoopbackPort();
    const server = startInstalled(consumer, { PORT: String(port), SUBSCRIBE_BLOCK_DISPOSABLE: 'true' });
    try {
      await waitForOutput(server, 'listening on', 20_000);
      const refused = await fetch(`http://127.0.0.1:${port}/api/subscribe`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ email: 'someone@mailinator.com', optInAttestation: true }),
      });
      expect(refused.status).toBe(422);
      expect(((await refused.json()) as { error: { details: unknown } }).error.details).toEqual([
        { path: 'email', message: 'must not be a disposable (throwaway) address' },
      ]);
    } finally {
      stopInstalled(server);
    }
  });

  it('installed with --omit=optional holds only the core, starts, and names prom-client when ADMIN_PORT asks for it', async () => {
    const core = join(scratch, 'consumer-core');
    mkdirSync(core);
    for (const file of ['package.json', 'package-lock.json']) writeFileSync(join(core, file), readFileSync(join(consumer, file)));
    const install = await exec('npm', ['ci', '--offline', '--ignore-scripts', '--omit=optional'], core);
    expect(install.stderr).not.toMatch(/ERR!/);
    expect(
      readdirSync(join(core, 'node_modules'))
        .filter((name) => !name.startsWith('.'))
        .sort(),
    ).toEqual(['@hono', 'hono', 'lru-cache', 'newsletter-bff', 'zod']);
    expect(readdirSync(join(core, 'node_modules', '@hono'))).toEqual(['node-server']);

    const port = await freeLoopbackPort();
    const server = startInstalled(core, { PORT: String(port) });
    try {
      await waitForOutput(server, 'listening on', 20_000);
      expect((await fetch(`http://127.0.0.1:${port}/api/issues?limit=1`)).status).toBe(200);
    } finally {
      stopInstalled(server);
    }
    const withAdmin = startInstalled(core, { PORT: String(port), ADMIN_PORT: String(await freeLoopbackPort()) });
    let stderr = '';
    withAdmin.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    expect(await new Promise((resolve) => withAdmin.once('exit', resolve))).toBe(1);
    // npx's own warnings (about this machine's npm configuration) aside, the one line.
    expect(stderr.split('\n').filter((line) => line && !line.startsWith('npm warn'))).toEqual([
      "newsletter-bff did not start: ADMIN_PORT (the admin listener's /metrics) needs the package prom-client, which is not installed: run `npm install prom-client`",
    ]);
  });
});

/** `npx newsletter-bff` in `cwd`, in its own process group, so the server npx starts stops with it. */
function startInstalled(cwd: string, extraEnv: Record<string, string>) {
  const { NEWSLETTER_API_KEY: _key, NODE_ENV: _mode, ...env } = process.env;
  return spawn('npx', ['--offline', '--no', 'newsletter-bff'], {
    cwd,
    env: { ...env, ...NPM_QUIET, HOST: '127.0.0.1', ...extraEnv },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

function stopInstalled(child: ReturnType<typeof startInstalled>) {
  if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
}
