// A local stand-in for the newsletter REST API, for `npm run bench` (bench/run.mjs).
// Listens on 127.0.0.1 only, answers after a configurable delay, serves a realistic archive
// (the four paths of src/upstream.ts, `{ ok: true, data }` envelopes) and counts calls per path.
import { createServer } from 'node:http';

const LOREM =
  'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. ';

/** ~`bytes` of issue HTML: paragraphs, a heading, a link and an image, like a real newsletter. */
function contentHtml(n, bytes) {
  let html = `<h1>Issue ${n}</h1><p><img src="https://cdn.example.com/img/${n}.png" alt=""></p>`;
  let paragraph = 0;
  while (html.length < bytes) {
    paragraph += 1;
    html += `<p>${LOREM.repeat(3)}<a href="https://example.com/read/${n}/${paragraph}">more</a></p>`;
  }
  return html.slice(0, bytes - 4) + '</p>';
}

/**
 * The simulated archive: `issues` sent public issues (newest first), `categories` categories,
 * ~`contentBytes` of contentHtml each, plus fields a public site never reads (stats, audience,
 * workspaceId, contentJson) so the BFF's allow-list and schema work on realistic rows.
 */
export function createArchive({ issues = 300, categories = 4, contentBytes = 5 * 1024 } = {}) {
  const cats = Array.from({ length: categories }, (_, i) => ({
    id: `cat_${i + 1}`,
    name: ['Engineering', 'Product', 'Design', 'Community', 'Research', 'Company'][i % 6] + (i >= 6 ? ` ${i}` : ''),
    slug: `category-${i + 1}`,
    workspaceId: 'ws_bench',
  }));
  const start = Date.UTC(2026, 0, 1, 9, 0, 0);
  const rows = [];
  for (let i = 0; i < issues; i += 1) {
    const n = issues - i;
    const category = i % 5 === 4 ? null : cats[i % cats.length];
    rows.push({
      id: `iss_${String(n).padStart(6, '0')}`,
      slug: `issue-${n}-weekly-notes`,
      subject: `Weekly notes #${n}: what we shipped, what we learned`,
      previewText: `A short preview of issue ${n}, shown in the archive list and in inboxes.`,
      thumbnailUrl: `https://cdn.example.com/thumbs/${n}.jpg`,
      contentHtml: contentHtml(n, contentBytes),
      contentJson: { type: 'doc', blocks: n },
      status: 'sent',
      isPublic: true,
      category,
      categories: category ? [category] : [],
      sentAt: new Date(start - i * 86_400_000).toISOString(),
      scheduledFor: null,
      workspaceId: 'ws_bench',
      createdBy: 'usr_editor',
      audience: { segmentIds: ['seg_all'] },
      stats: { recipients: 12_000 + n, opens: 6_000 + n, clicks: 900 + n },
    });
  }
  return { issues: rows, categories: cats };
}

/**
 * Starts the simulator. Returns its base URL (ending in /v1), a latency knob, call counters
 * and close(). `apiKey`: requests without `Authorization: Bearer <apiKey>` get a 401.
 */
export async function startUpstreamSim({ latencyMs = 50, apiKey, archive = createArchive() } = {}) {
  let latency = latencyMs;
  const counts = new Map();
  const slugCounts = new Map();
  let unknownSlugCalls = 0;
  const bySlug = new Map(archive.issues.map((issue) => [issue.slug, JSON.stringify({ ok: true, data: issue })]));
  const pages = new Map();
  const categoriesBody = JSON.stringify({ ok: true, data: archive.categories });
  const notFoundBody = JSON.stringify({ ok: false, error: { code: 'NOT_FOUND', message: 'Issue not found' } });
  let subscriberSeq = 0;

  const count = (key) => counts.set(key, (counts.get(key) ?? 0) + 1);

  function listPage(url) {
    const limit = Math.min(200, Math.max(1, Number(url.searchParams.get('limit') ?? 50) || 50));
    const offset = Math.max(0, Number(url.searchParams.get('offset') ?? 0) || 0);
    const key = `${limit}:${offset}`;
    let body = pages.get(key);
    if (body === undefined) {
      body = JSON.stringify({ ok: true, data: archive.issues.slice(offset, offset + limit) });
      pages.set(key, body);
    }
    return body;
  }

  function route(req, url, requestBody) {
    const path = url.pathname;
    if (req.headers.authorization !== `Bearer ${apiKey}`) {
      count('unauthorized');
      return [401, JSON.stringify({ ok: false, error: { code: 'UNAUTHORIZED', message: 'bad key' } })];
    }
    if (req.method === 'GET' && path === '/v1/newsletter/issues') {
      count('GET /newsletter/issues');
      return [200, listPage(url)];
    }
    if (req.method === 'GET' && path.startsWith('/v1/newsletter/issues/by-slug/')) {
      count('GET /newsletter/issues/by-slug/:slug');
      const slug = decodeURIComponent(path.slice('/v1/newsletter/issues/by-slug/'.length));
      const body = bySlug.get(slug);
      if (body === undefined) {
        unknownSlugCalls += 1;
        return [404, notFoundBody];
      }
      slugCounts.set(slug, (slugCounts.get(slug) ?? 0) + 1);
      return [200, body];
    }
    if (req.method === 'GET' && path === '/v1/newsletter/categories') {
      count('GET /newsletter/categories');
      return [200, categoriesBody];
    }
    if (req.method === 'POST' && path === '/v1/newsletter/subscribers') {
      count('POST /newsletter/subscribers');
      let email = '';
      try {
        email = JSON.parse(requestBody).email;
      } catch {
        return [422, JSON.stringify({ ok: false, error: { code: 'VALIDATION_ERROR', message: 'bad json' } })];
      }
      subscriberSeq += 1;
      return [201, JSON.stringify({ ok: true, data: { id: `sub_${subscriberSeq}`, email, status: 'subscribed' } })];
    }
    count(`other ${req.method} ${path.slice(0, 80)}`);
    return [404, JSON.stringify({ ok: false, error: { code: 'NOT_FOUND', message: 'no such route' } })];
  }

  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url, 'http://upstream.invalid');
      const [status, body] = route(req, url, Buffer.concat(chunks).toString('utf8'));
      const send = () => {
        if (res.destroyed) return;
        res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
        res.end(body);
      };
      if (latency > 0) setTimeout(send, latency);
      else send();
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();

  return {
    port,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    archive,
    get latencyMs() {
      return latency;
    },
    setLatency(ms) {
      latency = ms;
    },
    /** Calls per path so far, plus by-slug calls split into known and unknown slugs. */
    counts() {
      return { ...Object.fromEntries(counts), unknownSlugCalls };
    },
    callsFor(key) {
      return counts.get(key) ?? 0;
    },
    slugCalls(slug) {
      return slugCounts.get(slug) ?? 0;
    },
    get unknownSlugCalls() {
      return unknownSlugCalls;
    },
    close() {
      server.closeAllConnections?.();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
