import type { UpstreamIssue } from '../../src/core/upstream/schemas.js';

/** A public, sent issue as the upstream client hands it over, under `slug`. */
export function publicIssue(slug: string, extra: Partial<UpstreamIssue> = {}): UpstreamIssue {
  return {
    id: `id-${slug}`,
    slug,
    subject: `Subject of ${slug}`,
    previewText: null,
    thumbnailUrl: null,
    contentHtml: `<p>${slug}</p>`,
    status: 'sent',
    isPublic: true,
    category: null,
    categories: [],
    sentAt: '2026-01-01T00:00:00.000Z',
    ...extra,
  };
}
