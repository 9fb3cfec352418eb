import { defineMiddleware } from 'astro:middleware';
import { ServiceError } from './lib/service';

/**
 * The server build's answer when the newsletter service cannot be read: a 503 with Retry-After
 * (the reader tries again; a crawler comes back), never a 500, nor a 200 with half a page. Pages
 * read everything before they render (see src/pages/[...page].astro), so a failed read arrives
 * here before a byte is sent. A static build stops instead: no page is written with a hole in it.
 */
export const onRequest = defineMiddleware(async (context, next) => {
  try {
    return await next();
  } catch (error) {
    if (context.isPrerendered || !(error instanceof ServiceError)) throw error;
    console.error(`${context.url.pathname}: ${(error as Error).message}`);
    return new Response(UNAVAILABLE, {
      status: 503,
      headers: { 'Content-Type': 'text/html; charset=utf-8', 'Retry-After': '30', 'Cache-Control': 'no-store' },
    });
  }
});

const UNAVAILABLE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Back in a moment · The Field Notes</title></head>
<body><main><h1>Back in a moment</h1><p>The newsletter's archive cannot be read just now. Please try again in a minute.</p></main></body>
</html>
`;
