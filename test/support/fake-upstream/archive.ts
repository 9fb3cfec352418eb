import type { DemoCategory, DemoIssue, DemoIssueStats } from '../../../src/demo/sample-publication.js';

/** A generated publication: as many issues as asked, for the bench (the sample has ~40). */
export interface Archive {
  /** Sent public issues, newest first. */
  issues: DemoIssue[];
  categories: DemoCategory[];
}

const LOREM =
  'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. ';
const WORKSPACE_ID = 'ws_bench';
const ACCOUNT_SET_ID = 'as_bench';
const CATEGORY_NAMES = ['Engineering', 'Product', 'Design', 'Community', 'Research', 'Company'];
const DAY_MS = 86_400_000;

/** ~`bytes` of issue HTML: paragraphs, a heading, a link and an image, like a real newsletter. */
function contentHtml(n: number, bytes: number): string {
  let html = `<h1>Issue ${n}</h1><p><img src="https://cdn.example.com/img/${n}.png" alt=""></p>`;
  // Bounded: each round adds ~400 bytes.
  for (let paragraph = 1; html.length < bytes; paragraph += 1) {
    html += `<p>${LOREM.repeat(3)}<a href="https://example.com/read/${n}/${paragraph}">more</a></p>`;
  }
  return html.slice(0, bytes - 4) + '</p>';
}

function stats(n: number): DemoIssueStats {
  return {
    newSubscriberCount: n % 7,
    subscriberCountTargeted: 12_000 + n,
    sentCount: 12_000 + n,
    deliveredCount: 11_900 + n,
    openedCount: 6_000 + n,
    clickedCount: 900 + n,
    bouncedCount: 100,
    complainedCount: 0,
    failedCount: 0,
  };
}

/** ~`bytes` of editor state, as a block editor stores it (`contentJson`). */
function contentJson(n: number, bytes: number): unknown {
  if (bytes <= 0) return { type: 'doc', blocks: n };
  const block = { type: 'paragraph', text: LOREM.repeat(3) };
  const blockBytes = JSON.stringify(block).length + 1;
  return { type: 'doc', issue: n, blocks: Array.from({ length: Math.max(1, Math.round(bytes / blockBytes)) }, () => block) };
}

export interface ArchiveOptions {
  issues?: number;
  categories?: number;
  /** Bytes of `contentHtml` per issue (real letters: 30–100 KB). */
  contentBytes?: number;
  /** Bytes of `contentJson` per issue (0: a token object). */
  jsonBytes?: number;
  /**
   * Drafts created 0–10 days before they were sent, varying by issue, so the order of creation
   * differs from the order of sending for many letters; off (the default): each letter created
   * the day before it is sent, as most publications draft and send in order, so the two orders agree.
   */
  draftLeads?: boolean;
}

/**
 * `issues` sent public issues (newest first), one a day, over `categories` categories,
 * ~`contentBytes` of HTML each, with every internal field the service sends, so the BFF's
 * allow-list and schema work on realistic rows. Every fifth issue has no category.
 */
export function createArchive({ issues = 300, categories = 4, contentBytes = 5 * 1024, jsonBytes = 0, draftLeads = false }: ArchiveOptions = {}): Archive {
  const time = Date.UTC(2026, 0, 1, 9, 0, 0);
  const cats: DemoCategory[] = Array.from({ length: categories }, (_, i) => ({
    id: `cat_${i + 1}`,
    workspaceId: WORKSPACE_ID,
    accountSetId: ACCOUNT_SET_ID,
    name: (CATEGORY_NAMES[i % CATEGORY_NAMES.length] ?? 'Category') + (i >= CATEGORY_NAMES.length ? ` ${i}` : ''),
    slug: `category-${i + 1}`,
    createdAt: new Date(time - 400 * DAY_MS).toISOString(),
    updatedAt: new Date(time - 400 * DAY_MS).toISOString(),
  }));
  const rows: DemoIssue[] = [];
  for (let i = 0; i < issues; i += 1) {
    const n = issues - i;
    const category = i % 5 === 4 ? null : (cats[i % cats.length] ?? null);
    const sentAt = new Date(time - i * DAY_MS).toISOString();
    const createdAt = new Date(time - i * DAY_MS - (draftLeads ? (n * 7) % 11 : 1) * DAY_MS).toISOString();
    rows.push({
      id: `iss_${String(n).padStart(6, '0')}`,
      slug: `issue-${n}-weekly-notes`,
      workspaceId: WORKSPACE_ID,
      accountSetId: ACCOUNT_SET_ID,
      subject: `Weekly notes #${n}: what we shipped, what we learned`,
      previewText: `A short preview of issue ${n}, shown in the archive list and in inboxes.`,
      thumbnailUrl: `https://cdn.example.com/thumbs/${n}.jpg`,
      contentHtml: contentHtml(n, contentBytes),
      contentJson: contentJson(n, jsonBytes),
      scheduledFor: null,
      audience: { segmentIds: ['seg_all'] },
      status: 'sent',
      isPublic: true,
      category,
      categories: category ? [category] : [],
      stats: stats(n),
      createdBy: 'usr_editor',
      sentAt,
      createdAt,
      updatedAt: sentAt,
    });
  }
  return { issues: rows, categories: cats };
}
