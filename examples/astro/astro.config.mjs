// @ts-check
import { fileURLToPath } from 'node:url';
import node from '@astrojs/node';
import { defineConfig } from 'astro/config';

/**
 * One site, built two ways: static (the default: every page written at build time, the issues from
 * the content loader) or, with NEWSLETTER_SSR=1, as a Node server (@astrojs/node) whose pages
 * read the service at request time. SITE_URL is where it is served (canonical links, and the page
 * a form without JavaScript comes back to).
 */
const server = process.env.NEWSLETTER_SSR === '1';

/**
 * In this repository the package is the one built here (`npm run build` at the root); a site of yours installs it.
 * @param {string} path
 */
const repository = (path) => fileURLToPath(new URL(`../../${path}`, import.meta.url));

export default defineConfig({
  site: process.env.SITE_URL ?? 'http://localhost:4321',
  trailingSlash: 'always',
  output: server ? 'server' : 'static',
  adapter: server ? node({ mode: 'standalone' }) : undefined,
  outDir: server ? './dist-server' : './dist',
  // No telemetry, no font or image services: the build needs nothing but the newsletter service.
  devToolbar: { enabled: false },
  vite: {
    resolve: {
      alias: {
        'newsletter-bff/astro/SubscribeForm.astro': repository('examples/astro/src/components/SubscribeForm.astro'),
        'newsletter-bff/astro': repository('dist/integrations/astro.js'),
        'newsletter-bff/sanitize': repository('dist/tools/site/sanitize.js'),
        'newsletter-bff/subscribe.js': repository('examples/site/subscribe.js'),
      },
    },
  },
});
