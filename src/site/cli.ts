import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { importOptional } from '../optional-package.js';
import { createSitePaths } from './paths.js';
import { readPublication } from './read.js';
import { siteDigest, writeSite } from './write.js';

const USAGE = `usage: npm run site:build -- --api <url> --site-url <url> --out <dir> [--title <name>] [--description <text>]

  --api          the newsletter-bff service, e.g. https://news-api.example.com
  --site-url     where the built site will be served, e.g. https://news.example.com/
  --out          the folder to write (empty, missing, or a previous build, which is replaced)
  --title        the publication's name (default "The Field Notes", the demo's)
  --description  one sentence about it
`;

/** `npm run site:build`: reads the four routes, writes the static site, prints its digest. Exit 1 on any failure. */
async function main(): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        api: { type: 'string' },
        'site-url': { type: 'string' },
        out: { type: 'string' },
        title: { type: 'string', default: 'The Field Notes' },
        description: { type: 'string', default: 'A weekly letter about growing food in small city spaces.' },
        help: { type: 'boolean', default: false },
      },
    }));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}`);
    process.exitCode = 1;
    return;
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  if (!values.api || !values['site-url'] || !values.out) {
    process.stderr.write(USAGE);
    process.exitCode = 1;
    return;
  }
  // A bad --site-url fails before anything is read.
  createSitePaths(values['site-url']);
  // The builder sanitises each letter with sanitize-html, an optional package: loaded here, before any read.
  const { buildSite } = await importOptional('sanitize-html', 'npm run site:build (it sanitises each letter)', () => import('./build.js'));
  const started = performance.now();
  const examples = new URL('../../examples/', import.meta.url);
  const [styleCss, subscribeJs, subscribeFormSnippet, publication] = await Promise.all([
    readFile(new URL('site/style.css', examples), 'utf8'),
    readFile(new URL('site/subscribe.js', examples), 'utf8'),
    readFile(new URL('subscribe-form.html', examples), 'utf8'),
    readPublication({ apiUrl: values.api }),
  ]);
  const files = buildSite(publication, {
    siteUrl: values['site-url'],
    apiUrl: values.api,
    title: values.title,
    description: values.description,
    assets: { styleCss, subscribeJs, subscribeFormSnippet },
  });
  await writeSite(values.out, files);
  const bytes = [...files.values()].reduce((sum, text) => sum + Buffer.byteLength(text), 0);
  const pages = [...files.keys()].filter((path) => path.endsWith('.html')).length;
  process.stdout.write(
    `wrote ${files.size} files (${pages} pages, ${bytes} bytes) for ${publication.issues.length} issues to ${values.out} in ${Math.round(performance.now() - started)} ms\n` +
      `site digest: ${siteDigest(files)}\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`site build failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
