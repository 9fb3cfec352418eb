import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES } from '../src/core/config/config.js';

/** The owner-facing documents: every relative link resolves, and every setting is documented. */
const root = fileURLToPath(new URL('..', import.meta.url));
const DOCUMENTS = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** The text outside fenced code blocks and inline code, where a `[x](y)` is a link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchors for a document's headings: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, text] of markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const base = text!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

function brokenLinks(document: string): string[] {
  const markdown = readFileSync(join(root, document), 'utf8');
  const broken: string[] = [];
  for (const [, target] of prose(markdown).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target!)) continue; // https:, mailto:: not ours to resolve
    const [path = '', anchor] = target!.split('#');
    const file = path === '' ? join(root, document) : join(root, dirname(document), decodeURIComponent(path));
    if (!file.startsWith(root) || !existsSync(file)) {
      broken.push(`${document}: ${target} (no such file)`);
      continue;
    }
    if (anchor !== undefined && file.endsWith('.md') && !headingAnchors(readFileSync(file, 'utf8')).has(anchor)) {
      broken.push(`${document}: ${target} (no heading #${anchor} in ${relative(root, file)})`);
    }
  }
  return broken;
}

describe('the documentation', () => {
  it.each(DOCUMENTS)('%s: every relative link and anchor resolves inside the repository', (document) => {
    expect(brokenLinks(document)).toEqual([]);
  });

  it('names headings as GitHub anchors them', () => {
    expect(headingAnchors("## Node's hot path for fresh reads\n## POST /api/subscribe\n## Bot protection (Turnstile)\n## A\n## A")).toEqual(
      new Set(['nodes-hot-path-for-fresh-reads', 'post-apisubscribe', 'bot-protection-turnstile', 'a', 'a-1']),
    );
  });

  it('keeps the README short enough to read in five minutes', () => {
    expect(readFileSync(join(root, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(300);
  });

  it('gives every variable the configuration reads a row in docs/configuration.md', () => {
    const guide = readFileSync(join(root, 'docs', 'configuration.md'), 'utf8');
    const rows = new Set([...guide.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map(([, name]) => name));
    expect(CONFIG_VARIABLES.filter((name) => !rows.has(name))).toEqual([]);
    expect([...rows].filter((name) => !CONFIG_VARIABLES.includes(name!))).toEqual([]);
  });

  it('lists in the README only variables that exist', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1));
    const named = [...section.matchAll(/^\| ([^|]+) \|/gm)].flatMap(([, cell]) =>
      [...cell!.matchAll(/`([A-Z0-9_]+)`/g)].map(([, name]) => name!),
    );
    expect(named.length).toBeGreaterThan(10);
    expect(named.filter((name) => !CONFIG_VARIABLES.includes(name))).toEqual([]);
  });
});
