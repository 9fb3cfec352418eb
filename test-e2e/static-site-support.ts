import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { extname, join, normalize, sep } from 'node:path';
import { promisify } from 'node:util';
import { CONTENT_TYPES, listen, ROOT, type StaticSite } from './support.js';

const run = promisify(execFile);

/**
 * Serves a folder the way a static host does (Cloudflare Pages, nginx): `/x/` is `/x/index.html`,
 * the query string is ignored, and a missing page is 404.html with status 404. The folder may
 * be filled after the server starts (the site's URL must be known before it is built).
 */
export async function startFolderHost(host: string, dir: string): Promise<StaticSite> {
  const server = createServer(async (request, response) => {
    const path = decodeURIComponent(new URL(request.url ?? '/', 'http://host.invalid').pathname);
    const file = normalize(join(dir, path.endsWith('/') ? `${path}index.html` : path));
    let status = 200;
    let body: Buffer;
    try {
      if (!file.startsWith(dir + sep)) throw new Error('outside the site');
      body = await readFile(file);
    } catch {
      status = 404;
      body = await readFile(join(dir, '404.html')).catch(() => Buffer.from('not found'));
    }
    const type = status === 404 ? CONTENT_TYPES['.html']! : (CONTENT_TYPES[extname(file)] ?? 'application/octet-stream');
    response.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store' });
    response.end(request.method === 'HEAD' ? undefined : body);
  });
  const bound = await listen(server, host).catch(() => listen(server, '127.0.0.1'));
  return {
    origin: `http://${bound.address}:${bound.port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()).closeAllConnections()),
  };
}

/** `npm run site:build` as a site owner runs it (dist/ must be built); returns its summary line. */
export async function runSiteBuild(apiUrl: string, siteUrl: string, out: string): Promise<string> {
  const { stdout } = await run(process.execPath, ['dist/tools/site/main.js', '--api', apiUrl, '--site-url', siteUrl, '--out', out], {
    cwd: ROOT,
    // No --title: the site takes its name from PUBLICATION_NAME, as the service's feeds do.
    env: { ...process.env, PUBLICATION_NAME: 'The Field Notes' },
    timeout: 60_000,
  });
  return stdout;
}
