// The baseline of `npm run bench`: a bare Hono app on @hono/node-server that answers the
// same bytes as the BFF (same body, same Content-Type; ETag on a 304) from constants, with no
// middleware, cache, validation or logging. Run by bench/run.mjs as a child process:
//   PORT=<port> HOST=127.0.0.1 node bench/baseline-server.mjs <responses.json>
// responses.json: { "<path?query>": { "body": string (or "bodyBase64": the bytes of a compressed copy, and its
//   "contentEncoding"), "contentType": string, "etag"?: string, "headers"?: { name: value } (BENCH_BASELINE_HEADERS=same: every header the BFF sent, instead of Content-Type alone) } }
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node bench/baseline-server.mjs <responses.json>\n');
  process.exit(2);
}
const responses = new Map(
  Object.entries(JSON.parse(readFileSync(file, 'utf8'))).map(([key, value]) => [
    key,
    {
      // A compressed copy as zlib hands it to a bare app: a Buffer, which Node writes without wrapping it in one.
      body: value.bodyBase64 === undefined ? value.body : Buffer.from(value.bodyBase64, 'base64'),
      headers: value.headers ?? {
        'Content-Type': value.contentType,
        ...(value.contentEncoding && { 'Content-Encoding': value.contentEncoding }),
      },
      notModifiedHeaders: value.headers ? withoutContentType(value.headers) : { ETag: value.etag },
      etag: value.etag,
      sameHeaders: value.headers !== undefined,
    },
  ]),
);

function withoutContentType(headers) {
  const rest = { ...headers };
  delete rest['content-type'];
  return rest;
}

function answer(c) {
  const url = c.req.url;
  const entry = responses.get(url.slice(url.indexOf('/', 8)));
  if (entry === undefined) return c.body(null, 404);
  if (entry.etag !== undefined && c.req.header('if-none-match') !== undefined) {
    if (entry.sameHeaders) return new Response(null, { status: 304, headers: entry.notModifiedHeaders });
    return c.body(null, 304, entry.notModifiedHeaders);
  }
  // With the BFF's headers, the response is built the way the BFF builds a cached hit (a plain
  // header record, which @hono/node-server writes straight to the socket): c.body() would turn
  // fifteen headers into a Headers object and take the slower path, flattering the ratio.
  if (entry.sameHeaders) return new Response(entry.body, { status: 200, headers: entry.headers });
  return c.body(entry.body, 200, entry.headers);
}

const app = new Hono();
app.get('/api/issues', answer);
app.get('/api/issues/:slug', answer);
app.get('/api/categories', answer);

const server = serve({ fetch: app.fetch, hostname: process.env.HOST ?? '127.0.0.1', port: Number(process.env.PORT ?? 0) }, (info) => {
  process.stdout.write(`baseline listening on http://${info.address}:${info.port}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
