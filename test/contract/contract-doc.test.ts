import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_STATUS, createErrorBodySchemas } from '../../src/core/http/errors.js';
import {
  ArchivePageBodySchema,
  CategoryListingSchema,
  IssueDetailSchema,
  IssueNeighbourSchema,
  IssueSummarySchema,
  PublicCategorySchema,
  SubscribeBodySchema,
} from '../../src/core/public-shapes.js';
import { FORMATS } from '../../src/core/routes/archive-format.js';
import { PAGE_SIZE, createArchiveQuerySchema } from '../../src/core/routes/archive-query.js';
import { SLUG_PATTERN } from '../../src/core/slug.js';
import { SUBSCRIBE_FIELDS } from '../../src/core/subscribe/input.js';

/**
 * docs/contract.md says in words what the schemas say in code. It is not generated (it explains
 * too much around each list), so its lists are held to the schemas here: a field, parameter or
 * error code added to the code fails this test until the page names it.
 */
const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');
const page = read('docs/contract.md');
/** The pages that describe our public shapes to their readers (docs/upstream.md describes the upstream's). */
const PAGES_OF_THE_SHAPES = ['docs/contract.md', 'docs/architecture.md', 'README.md'];

/** The text of a `## ` or `### ` section, up to the next heading of any level. */
function section(heading: string): string {
  const start = page.indexOf(`\n${heading}\n`);
  if (start === -1) throw new Error(`docs/contract.md has no section "${heading}"`);
  const rest = page.slice(start + heading.length + 2);
  const end = rest.search(/^#{1,3} /m);
  return end === -1 ? rest : rest.slice(0, end);
}

/** Every `code span` of a text. */
const codeSpans = (text: string) => [...text.matchAll(/`([^`\n]+)`/g)].map((match) => match[1]!);

/** The field lists a text writes as `{ a, b, c }` (or `[{ a, b }]`), each as its keys. */
const fieldLists = (text: string) =>
  codeSpans(text)
    .map((span) => /^\[?\{ (\w+(?:, \w+)*) \}\]?$/.exec(span)?.[1])
    .filter((list): list is string => list !== undefined)
    .map((list) => list.split(', ').sort());

const keys = (schema: { shape: object }) => Object.keys(schema.shape).sort();
const errorSchemas = createErrorBodySchemas();

describe('docs/contract.md, against the schemas', () => {
  it('writes every field list, here and in the architecture and the README, as the fields of one of the public shapes', () => {
    const shapes = [
      PublicCategorySchema,
      CategoryListingSchema,
      IssueSummarySchema,
      IssueNeighbourSchema,
      IssueDetailSchema,
      ArchivePageBodySchema.shape.meta,
      SubscribeBodySchema.shape.data,
      errorSchemas.ErrorBody.shape.error,
      errorSchemas.ValidationIssue,
    ];
    // A list may leave out the optional fields (`details` lists `{ path, message }`).
    const known = shapes.flatMap((shape) => {
      const required = Object.entries(shape.shape)
        .filter(([, field]) => (field as { _zod: { optout?: string } })._zod.optout !== 'optional')
        .map(([name]) => name)
        .sort();
      return [keys(shape), required].map((list) => list.join(', '));
    });
    for (const path of PAGES_OF_THE_SHAPES) {
      for (const list of fieldLists(read(path))) expect(known, `${path}: { ${list.join(', ')} }`).toContain(list.join(', '));
    }
    expect(fieldLists(page).length).toBeGreaterThan(4);
  });

  it('gives the archive page, its summaries and their category in "GET /api/issues"', () => {
    const lists = fieldLists(section('### GET /api/issues')).map((list) => list.join(', '));
    expect(lists).toEqual(
      expect.arrayContaining(
        [keys(IssueSummarySchema), keys(PublicCategorySchema), keys(ArchivePageBodySchema.shape.meta)].map((list) => list.join(', ')),
      ),
    );
  });

  it('names each query parameter of the archive, its formats and the page size in "GET /api/issues"', () => {
    const text = section('### GET /api/issues');
    const named = codeSpans(text);
    for (const parameter of Object.keys(createArchiveQuerySchema(5000).shape)) expect(named, parameter).toContain(parameter);
    for (const format of FORMATS) expect(named, format).toContain(format);
    expect(text).toContain(`from ${PAGE_SIZE.min} to ${PAGE_SIZE.max} (default ${PAGE_SIZE.fallback})`);
  });

  it('gives the slug rule and every field an issue adds to its summary in "GET /api/issues/:slug"', () => {
    const named = codeSpans(section('### GET /api/issues/:slug'));
    expect(named).toContain(SLUG_PATTERN.source);
    const added = Object.keys(IssueDetailSchema.shape).filter((field) => !(field in IssueSummarySchema.shape));
    expect(added.length).toBeGreaterThan(0);
    for (const field of added) expect(named, field).toContain(field);
    expect(fieldLists(section('### GET /api/issues/:slug')).map((list) => list.join(', '))).toContain(
      keys(IssueNeighbourSchema).join(', '),
    );
  });

  it('gives the categories as the fields of a category listing in "GET /api/categories"', () => {
    expect(fieldLists(section('### GET /api/categories')).map((list) => list.join(', '))).toContain(keys(CategoryListingSchema).join(', '));
  });

  it('has a row for each field of the subscribe body, and for no other, in "POST /api/subscribe"', () => {
    const rows = section('### POST /api/subscribe')
      .split('\n')
      .map((line) => /^\| `(\w+)` \|/.exec(line)?.[1])
      .filter((field): field is string => field !== undefined);
    expect(rows).toEqual(SUBSCRIBE_FIELDS);
  });

  it('lists every error code with its status, and no other, in "Errors we return"', () => {
    const rows = section('## Errors we return')
      .split('\n')
      .map((line) => /^\| `([A-Z_]+)` \| (\d{3}) \|/.exec(line))
      .filter((row) => row !== null)
      .map((row) => [row[1]!, Number(row[2])]);
    expect(Object.fromEntries(rows)).toEqual(ERROR_STATUS);
    expect(rows).toHaveLength(Object.keys(ERROR_STATUS).length);
  });
});
