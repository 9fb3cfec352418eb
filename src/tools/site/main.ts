import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { importOptional } from '../../node/optional-package.js';
import { readPublication } from './read.js';

const OPTIONS = {
  api: { type: 'string', help: 'the newsletter-bff service, e.g. https://news-api.example.com (the subscribe form posts there)' },
  'site-url': { type: 'string', help: 'where the built site will be served, e.g. https://news.example.com/' },
  out: { type: 'string', help: 'the folder to write (empty, missing, or a previous build, which is replaced)' },
  'read-upstream': { type: 'boolean', default: false, help: 'read the upstream directly (NEWSLETTER_API_KEY and NEWSLETTER_API_BASE_URL)' },
  'search-api': { type: 'string', help: 'the service the search page asks (default: --api); none: the page filters its own list' },
  title: { type: 'string', help: "the publication's name (default: PUBLICATION_NAME, else the --site-url's host)" },
  description: { type: 'string', help: 'one sentence about it (default: "The archive of <title>.")' },
  help: { type: 'boolean', default: false },
} as const;

const USAGE = `usage: npm run site:build -- --api <url> --site-url <url> --out <dir> [options]

${Object.entries(OPTIONS)
  .flatMap(([name, option]) => ('help' in option ? [`  ${`--${name}`.padEnd(17)}${option.help}`] : []))
  .join('\n')}

A busy answer (429, or 503 with Retry-After) is tried again after the wait it names.
`;

async function main(): Promise<void> {
  let values: ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>['values'] | undefined;
  try {
    values = parseArgs({ options: OPTIONS }).values;
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
  }
  const help = values?.help === true;
  if (help || !values?.api || !values['site-url'] || !values.out) {
    (help ? process.stdout : process.stderr).write(USAGE);
    process.exitCode = help ? 0 : 1;
    return;
  }
  // Bad URLs fail before anything is read; sanitize-html is optional, so it is loaded before any read too.
  const isHttp = (url: string) => /^https?:$/.test(new URL(url).protocol);
  if (!isHttp(values['site-url'])) throw new Error('the site URL must be http(s)');
  const searchApi = values['search-api'] ?? values.api;
  if (searchApi !== 'none' && !isHttp(searchApi)) throw new Error('--search-api must be an http(s) URL or none');
  const site = await importOptional('sanitize-html', 'npm run site:build (it sanitises each letter)', () => import('./build.js'));
  const title = values.title ?? (process.env.PUBLICATION_NAME?.trim() || new URL(values['site-url']).host);
  const description = values.description ?? `The archive of ${title}.`;
  const started = performance.now();
  const examples = new URL('../../../examples/', import.meta.url);
  const [styleCss, subscribeJs, faviconSvg, subscribeFormSnippet, publication] = await Promise.all([
    readFile(new URL('site/style.css', examples), 'utf8'),
    readFile(new URL('site/subscribe.js', examples), 'utf8'),
    readFile(new URL('site/favicon.svg', examples), 'utf8'),
    readFile(new URL('subscribe-form.html', examples), 'utf8'),
    readPublication({
      apiUrl: values.api,
      fetch: values['read-upstream']
        ? site.createInProcessService(process.env, { write: (line) => process.stderr.write(`${line}\n`) })
        : undefined,
      onWait: ({ path, status, ms, attempt }) =>
        process.stderr.write(`${path} answered ${status}: waiting ${Math.ceil(ms / 1000)} s before retry ${attempt}\n`),
    }),
  ]);
  const files = site.buildSite(publication, {
    siteUrl: values['site-url'],
    apiUrl: values.api,
    searchApiUrl: searchApi === 'none' ? undefined : searchApi,
    title,
    description,
    assets: { styleCss, subscribeJs, faviconSvg, subscribeFormSnippet },
  });
  await site.writeSite(values.out, files);
  const bytes = [...files.values()].reduce((sum, text) => sum + Buffer.byteLength(text), 0);
  const pages = [...files.keys()].filter((path) => path.endsWith('.html')).length;
  const wrote = `wrote ${files.size} files (${pages} pages, ${bytes} bytes) for ${publication.issues.length} issues to ${values.out}`;
  process.stdout.write(`${wrote} in ${Math.round(performance.now() - started)} ms\nsite digest: ${site.siteDigest(files)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`site build failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
