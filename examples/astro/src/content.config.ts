import { defineCollection } from 'astro:content';
import { newsletterLoader } from 'newsletter-bff/astro';
import { letterHtml } from './lib/letter';
import { SERVICE_URL } from './lib/service';

/**
 * One entry per public issue, read from the service at build time; the next build reads only
 * what changed (docs/frameworks.md "Astro").
 */
const issues = defineCollection({
  loader: newsletterLoader({ url: SERVICE_URL, sanitize: (html, issue) => letterHtml(html, issue.subject) }),
});

export const collections = { issues };
