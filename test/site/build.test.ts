import { parseFeed } from '@rowanmanning/feed-parser';
import { textContent } from 'domutils';
import { XMLValidator } from 'fast-xml-parser';
import { beforeAll, describe, expect, it } from 'vitest';
import type { IssueDetail } from '../../src/core/public-shapes.js';
import { buildSite, type SiteOptions } from '../../src/tools/site/build.js';
import { all, API_URL, attr, buildDemoSite, fileForHref, parseHtml, SITE_URL, siteAssets, siteOptions } from './site-support.js';

let assets: SiteOptions['assets'];
let demo: Awaited<ReturnType<typeof buildDemoSite>>;

beforeAll(async () => {
  assets = await siteAssets();
  demo = await buildDemoSite(assets);
});

const htmlFiles = () => [...demo.files.keys()].filter((path) => path.endsWith('.html'));
const page = (path: string) => parseHtml(demo.files.get(path)!);

/** Every internal link, stylesheet, script and image of the site's pages that no file serves. */
function unresolvedLinks(files: ReadonlyMap<string, string>): string[] {
  const missing: string[] = [];
  for (const [path, html] of files) {
    if (!path.endsWith('.html')) continue;
    for (const element of all(parseHtml(html), 'a[href], link[href], script[src], img[src]')) {
      const href = element.attribs.href ?? element.attribs.src!;
      const file = fileForHref(href);
      if (file !== undefined && !files.has(file)) missing.push(`${path}: ${href}`);
    }
  }
  return missing;
}

describe('the static site built from the demo', () => {
  it('has the archive in pages of ten, a page per category, a page per issue, the feed, sitemap, robots.txt and 404', () => {
    const issues = demo.publication.issues;
    expect(issues).toHaveLength(48);
    for (const issue of issues) expect(demo.files.has(`issues/${issue.slug}/index.html`)).toBe(true);
    expect([...demo.files.keys()].filter((path) => /^(page\/\d+\/)?index\.html$/.test(path)).sort()).toEqual([
      'index.html',
      'page/2/index.html',
      'page/3/index.html',
      'page/4/index.html',
      'page/5/index.html',
    ]);
    for (const category of demo.publication.categories) expect(demo.files.has(`categories/${category.slug}/index.html`)).toBe(true);
    for (const file of ['feed.xml', 'sitemap.xml', 'robots.txt', '404.html', 'style.css', 'subscribe.js'])
      expect(demo.files.has(file)).toBe(true);
  });

  it('lists issues as plain links on the archive pages, newest first, readable without JavaScript', () => {
    const first = page('index.html');
    const links = all(first, '.issue-list h2 a');
    expect(links).toHaveLength(10);
    expect(links.map((link) => textContent(link))).toEqual(demo.publication.issues.slice(0, 10).map((issue) => issue.subject));
    expect(links[0]!.attribs.href).toBe(`/letters/issues/${demo.publication.issues[0]!.slug}/`);
    expect(all(first, 'noscript .state')).toEqual([]);
    expect(attr(first, 'a[rel="next"]', 'href')).toBe('/letters/page/2/');
    expect(attr(page('page/5/index.html'), 'a[rel="prev"]', 'href')).toBe('/letters/page/4/');
  });

  it('shows each issue page with title, description, canonical, Open Graph, Twitter card, JSON-LD and the feed link', () => {
    const issue = demo.publication.issues.find((i) => i.slug === 'the-winter-seed-swap-at-hollis-library')!;
    const doc = page(`issues/${issue.slug}/index.html`);
    const url = `${SITE_URL}issues/${issue.slug}/`;
    expect(textContent(all(doc, 'title'))).toBe('The Winter Seed Swap at Hollis Library · The Field Notes');
    expect(attr(doc, 'meta[name="description"]', 'content')).toBe('Bring an envelope, leave with a summer.');
    expect(attr(doc, 'link[rel="canonical"]', 'href')).toBe(url);
    expect(attr(doc, 'meta[property="og:type"]', 'content')).toBe('article');
    expect(attr(doc, 'meta[property="og:title"]', 'content')).toBe(issue.subject);
    expect(attr(doc, 'meta[property="og:description"]', 'content')).toBe('Bring an envelope, leave with a summer.');
    expect(attr(doc, 'meta[property="og:url"]', 'content')).toBe(url);
    expect(attr(doc, 'meta[property="og:image"]', 'content')).toBe(issue.thumbnailUrl);
    expect(attr(doc, 'meta[property="article:published_time"]', 'content')).toBe('2026-01-25T09:00:00.000Z');
    expect(attr(doc, 'meta[name="twitter:card"]', 'content')).toBe('summary_large_image');
    expect(attr(doc, 'meta[name="twitter:image"]', 'content')).toBe(issue.thumbnailUrl);
    expect(attr(doc, 'link[rel="alternate"][type="application/atom+xml"]', 'href')).toBe('/letters/feed.xml');
    const jsonLd = JSON.parse(textContent(all(doc, 'script[type="application/ld+json"]')));
    expect(jsonLd).toMatchObject({
      '@type': 'Article',
      headline: issue.subject,
      datePublished: issue.sentAt,
      url,
      image: [issue.thumbnailUrl],
    });
  });

  it("shows the letter inline and its title once: the letter's own leading <h1> is dropped", () => {
    for (const issue of demo.publication.issues) {
      const doc = page(`issues/${issue.slug}/index.html`);
      expect(all(doc, 'h1').map((h) => textContent(h))).toEqual([issue.subject]);
      expect(textContent(all(doc, '.letter')).length).toBeGreaterThan(200);
    }
  });

  it('gives every page one title, a description, an icon, and (but the 404) a canonical link and a subscribe form that posts to the service', () => {
    for (const path of htmlFiles()) {
      const doc = page(path);
      expect(all(doc, 'title'), path).toHaveLength(1);
      expect(attr(doc, 'meta[name="description"]', 'content'), path).toBeTruthy();
      expect(attr(doc, 'link[rel="icon"]', 'href'), path).toBe(new URL('favicon.svg', SITE_URL).pathname);
      expect(attr(doc, 'link[rel="canonical"]', 'href'), path).toBe(
        path === '404.html' ? undefined : new URL(path.replace(/index\.html$/, ''), SITE_URL).href,
      );
      const form = all(doc, 'form[data-newsletter-subscribe]');
      expect(form, path).toHaveLength(1);
      expect(form[0]!.attribs.method).toBe('post');
      expect(form[0]!.attribs.action).toBe(`${API_URL}/api/subscribe`);
      expect(all(form[0]!, 'input[name="email"][required], input[name="optInAttestation"][required]')).toHaveLength(2);
    }
  });

  it('resolves every internal link, stylesheet, script and image to a file of the site', () => {
    expect(unresolvedLinks(demo.files)).toEqual([]);
  });

  it('has a feed of the newest 20 issues that a feed parser reads, and a sitemap of every page with lastmod', () => {
    const xml = demo.files.get('feed.xml')!;
    expect(XMLValidator.validate(xml)).toBe(true);
    const feed = parseFeed(xml);
    expect(feed.items.map((item) => item.url)).toEqual(demo.publication.issues.slice(0, 20).map((i) => `${SITE_URL}issues/${i.slug}/`));
    const sitemap = demo.files.get('sitemap.xml')!;
    expect(XMLValidator.validate(sitemap)).toBe(true);
    const locs = [...sitemap.matchAll(/<loc>([^<]+)<\/loc>\s*<lastmod>(\d{4}-\d{2}-\d{2})<\/lastmod>/g)].map((m) => m[1]);
    // Every page but the 404 and the search page (a page of results for any query, noindex).
    const pages = htmlFiles()
      .filter((path) => path !== '404.html' && path !== 'search/index.html')
      .map((path) => new URL(path.replace(/index\.html$/, ''), SITE_URL).href);
    expect(locs.sort()).toEqual(pages.sort());
    expect(demo.files.get('robots.txt')).toContain(`Sitemap: ${SITE_URL}sitemap.xml`);
  });

  it('dates each issue in the sitemap by its last change, and each listing by its latest', () => {
    // An older issue edited after the newest was sent.
    const issues = demo.publication.issues.map((issue, at) => (at === 3 ? { ...issue, updatedAt: '2027-03-04T05:06:07.000Z' } : issue));
    const files = buildSite({ ...demo.publication, issues }, siteOptions(assets));
    const lastmod = new Map(
      [...files.get('sitemap.xml')!.matchAll(/<loc>([^<]+)<\/loc>\s*<lastmod>([^<]+)<\/lastmod>/g)].map((m) => [m[1], m[2]]),
    );
    const changed = (issue: IssueDetail) =>
      [issue.updatedAt, issue.sentAt]
        .filter((date): date is string => date !== null)
        .sort()
        .at(-1)!
        .slice(0, 10);
    for (const issue of issues) expect(lastmod.get(`${SITE_URL}issues/${issue.slug}/`)).toBe(changed(issue));
    expect(lastmod.get(`${SITE_URL}issues/${issues[3]!.slug}/`)).toBe('2027-03-04');
    expect(lastmod.get(SITE_URL)).toBe('2027-03-04');
    expect(lastmod.get(`${SITE_URL}page/2/`)).toBe('2027-03-04');
    expect(files.get('feed.xml')).toContain('<updated>2027-03-04T05:06:07.000Z</updated>');
  });

  it('links each issue page to the newer and older issue, none at the ends, and shows its reading time', () => {
    const issues = demo.publication.issues;
    const links = (slug: string) =>
      all(page(`issues/${slug}/index.html`), '.neighbours a').map((a) => [a.attribs.rel, a.attribs.href, textContent(a)]);
    expect(links(issues[0]!.slug)).toEqual([['next', `/letters/issues/${issues[1]!.slug}/`, `Older: ${issues[1]!.subject} →`]]);
    expect(links(issues[5]!.slug)).toEqual([
      ['prev', `/letters/issues/${issues[4]!.slug}/`, `← Newer: ${issues[4]!.subject}`],
      ['next', `/letters/issues/${issues[6]!.slug}/`, `Older: ${issues[6]!.subject} →`],
    ]);
    expect(links(issues.at(-1)!.slug)).toEqual([['prev', `/letters/issues/${issues.at(-2)!.slug}/`, `← Newer: ${issues.at(-2)!.subject}`]]);
    expect(textContent(all(page(`issues/${issues[0]!.slug}/index.html`), '.issue-header .meta')[0]!)).toContain(
      `${issues[0]!.readingMinutes} min read`,
    );
    expect(textContent(all(page('index.html'), '.issue-card .meta')[0]!)).toContain(`${issues[0]!.readingMinutes} min read`);
  });

  it('has a search box on the archive pages, posting by GET to a search page that lists every issue with the words to filter it by', () => {
    const form = all(page('index.html'), 'form#search')[0]!;
    expect(form.attribs).toMatchObject({ method: 'get', action: '/letters/search/', role: 'search' });
    expect(all(form, 'input[name="q"][type="search"][maxlength="200"]')).toHaveLength(1);
    const search = page('search/index.html');
    expect(all(search, 'meta[name="robots"]')[0]!.attribs.content).toBe('noindex');
    const script = all(search, 'script[src="/letters/search.js"]')[0]!;
    expect(script.attribs['data-root']).toBe('/letters/');
    expect(script.attribs['data-api']).toBe(API_URL);
    const items = all(search, '.all-issues li');
    expect(items.map((item) => all(item, 'a')[0]!.attribs.href)).toEqual(
      demo.publication.issues.map((issue) => `/letters/issues/${issue.slug}/`),
    );
    expect(items[0]!.attribs['data-words']).toContain('planning');
    expect(demo.files.get('search.js')).toContain('/api/issues?');
  });

  it('builds a search page that asks no service when none is named', () => {
    const files = buildSite(demo.publication, { ...siteOptions(assets), searchApiUrl: undefined });
    const script = all(parseHtml(files.get('search/index.html')!), 'script[src="/letters/search.js"]')[0]!;
    expect(script.attribs['data-api']).toBeUndefined();
    expect(textContent(parseHtml(files.get('search/index.html')!))).toContain('filters them by subject, preview and category');
  });

  it('is byte-identical when built again from a fresh service', async () => {
    const again = await buildDemoSite(assets);
    expect([...again.files.keys()].sort()).toEqual([...demo.files.keys()].sort());
    for (const [path, content] of demo.files) expect(again.files.get(path), path).toBe(content);
  });
});

describe('a letter with hostile HTML', () => {
  const HOSTILE_HTML = [
    '<h1>Not the subject</h1>',
    '<script>alert(1)</script><p onclick="alert(2)" style="position:fixed">Hello <a href="javascript:alert(3)">there</a>',
    '<a href="https://example.org/x" target="_self">out</a><img src="x" onerror="alert(4)"><img src="https://img.example.org/a.png" onload="alert(5)">',
    '<form action="https://evil.example/"><input name="password"></form><base href="https://evil.example/">',
    '<iframe src="https://evil.example/"></iframe><svg onload="alert(6)"><script>alert(7)</script></svg>',
    '<meta http-equiv="refresh" content="0;url=https://evil.example/"><style>body{display:none}</style><object data="x"></object></p>',
  ].join('');
  const issue: IssueDetail = {
    slug: 'hostile',
    subject: 'A <script>alert("subject")</script> & ]]> subject',
    previewText: null,
    thumbnailUrl: null,
    sentAt: '2026-01-01T09:00:00.000Z',
    updatedAt: null,
    category: null,
    readingMinutes: 1,
    contentHtml: HOSTILE_HTML,
    newer: null,
    older: null,
  };

  it('keeps no script, event handler, javascript: URL, form, base, frame, meta refresh or style of it', () => {
    const files = buildSite({ issues: [issue], categories: [] }, siteOptions(assets));
    const html = files.get('issues/hostile/index.html')!;
    const letter = all(parseHtml(html), '.letter')[0]!;
    expect(all(letter, 'script, form, input, base, iframe, svg, meta, style, object')).toEqual([]);
    for (const element of all(letter, '*')) {
      for (const name of Object.keys(element.attribs)) expect(name, `${element.name} ${name}`).not.toMatch(/^on|^style$/i);
    }
    expect(html).not.toMatch(/javascript:|alert\([1-7]\)/);
    expect(all(letter, 'a').map((a) => [a.attribs.href, a.attribs.rel, a.attribs.target])).toEqual([
      [undefined, 'noopener noreferrer', '_blank'],
      ['https://example.org/x', 'noopener noreferrer', '_blank'],
    ]);
    // The image with a relative source is gone; the other keeps its source and loses its handler.
    expect(all(letter, 'img').map((img) => img.attribs.src)).toEqual(['https://img.example.org/a.png']);
    // A leading <h1> that is not the subject stays.
    expect(textContent(all(letter, 'h1'))).toBe('Not the subject');
  });

  // The two XSS fixes of sanitize-html after the version pinned for Node 20 (docs/dependencies.md):
  // both need a tag our allow-list refuses (textarea or xmp; svg), so neither reaches the page.
  it('keeps nothing of a </textarea/> or <xmp> mutation, nor of an SVG animation that sets a javascript: link', () => {
    const contentHtml = [
      '<textarea><p title="</textarea/><img src=x onerror=alert(8)>"></p></textarea>',
      '<xmp><p title="</xmp/><img src=x onerror=alert(9)>"></p></xmp>',
      '<svg><a><animate attributeName="href" values="javascript:alert(10)"/><set attributeName="href" to="javascript:alert(11)"/><text>x</text></a></svg>',
      '<p>After</p>',
    ].join('');
    const files = buildSite({ issues: [{ ...issue, contentHtml }], categories: [] }, siteOptions(assets));
    const html = files.get('issues/hostile/index.html')!;
    const letter = all(parseHtml(html), '.letter')[0]!;
    expect(all(letter, 'textarea, xmp, svg, animate, set, img')).toEqual([]);
    // What was inside <xmp> is left as escaped text (in the page and its description): no element of the page has a handler.
    for (const element of all(parseHtml(html), '*')) expect(Object.keys(element.attribs).filter((name) => /^on/i.test(name))).toEqual([]);
    expect(html).not.toContain('javascript:');
    expect(textContent(all(letter, 'p'))).toBe('After');
  });

  it('escapes a hostile subject everywhere it appears: title, headings, head tags, JSON-LD and feed', () => {
    const files = buildSite({ issues: [issue], categories: [] }, siteOptions(assets));
    const doc = parseHtml(files.get('issues/hostile/index.html')!);
    expect(textContent(all(doc, 'h1#issue-title'))).toBe(issue.subject);
    expect(attr(doc, 'meta[property="og:title"]', 'content')).toBe(issue.subject);
    expect(JSON.parse(textContent(all(doc, 'script[type="application/ld+json"]'))).headline).toBe(issue.subject);
    expect(all(doc, 'script').map((s) => s.attribs.src ?? s.attribs.type)).toEqual(['application/ld+json', '/letters/subscribe.js']);
    expect(textContent(all(parseHtml(files.get('index.html')!), '.issue-list h2 a'))).toBe(issue.subject);
    expect(parseFeed(files.get('feed.xml')!).items[0]!.title).toBe(issue.subject);
  });
});

/** A one-paragraph letter in `category`. */
function letterIn(slug: string, category: IssueDetail['category']): IssueDetail {
  return {
    slug,
    subject: slug,
    previewText: 'p',
    thumbnailUrl: null,
    sentAt: '2026-01-01T09:00:00.000Z',
    updatedAt: null,
    category,
    readingMinutes: 1,
    contentHtml: '<p>Hi</p>',
    newer: null,
    older: null,
  };
}

describe('a publication whose issues name a category the categories route does not list', () => {
  it('gives that category its page too, so no category link leads nowhere', () => {
    const issue = letterIn('orphan', { name: 'Unlisted', slug: 'unlisted' });
    const files = buildSite({ issues: [issue], categories: [{ name: 'Listed', slug: 'listed' }] }, siteOptions(assets));
    expect(files.has('categories/unlisted/index.html')).toBe(true);
    expect(all(parseHtml(files.get('index.html')!), '.categories a').map((a) => textContent(a))).toEqual([
      'All issues',
      'Listed',
      'Unlisted',
    ]);
  });
});

describe('a publication from a service that passes an issue category whose slug cannot be a folder', () => {
  it('shows that category by name without a link, writes no page for it, and every link resolves', () => {
    const issue = letterIn('ampersand', { name: 'Cats & Dogs', slug: 'c&d' });
    const files = buildSite(
      {
        issues: [issue],
        categories: [
          { name: 'Listed', slug: 'listed' },
          { name: 'Cats & Dogs', slug: 'c&d' },
        ],
      },
      siteOptions(assets),
    );
    expect([...files.keys()].filter((path) => path.startsWith('categories/'))).toEqual(['categories/listed/index.html']);
    const index = parseHtml(files.get('index.html')!);
    expect(all(index, 'a.category')).toEqual([]);
    expect(textContent(all(index, 'span.category'))).toBe('Cats & Dogs');
    expect(unresolvedLinks(files)).toEqual([]);
  });
});
