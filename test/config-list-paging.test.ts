import { describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../src/core/config/config.js';

const KEY = 'k'.repeat(20);
const BASE_URL = 'https://api.example.com/v1';

function configWith(env: Record<string, unknown> = {}): Config {
  const result = parseConfig({ NEWSLETTER_API_KEY: KEY, NEWSLETTER_API_BASE_URL: BASE_URL, ...env });
  if (!result.ok) throw new Error(`expected a valid config, got: ${result.problems.join(' | ')}`);
  return result.config;
}

function problemsOf(env: Record<string, unknown>): string[] {
  const result = parseConfig({ NEWSLETTER_API_KEY: KEY, NEWSLETTER_API_BASE_URL: BASE_URL, ...env });
  if (result.ok) throw new Error('expected configuration problems, but the source was accepted');
  return result.problems;
}

describe('parseConfig UPSTREAM_LIST_* (how List Issues pages)', () => {
  it('defaults to the guesses: limit, and offset paging under offset', () => {
    expect(configWith().listPaging).toEqual({ limitParam: 'limit', style: 'offset', pagingParam: 'offset', pageSize: 200 });
  });

  it('pages by number under page when UPSTREAM_LIST_PAGING=page, unless another name is set', () => {
    expect(configWith({ UPSTREAM_LIST_PAGING: 'page' }).listPaging).toMatchObject({ style: 'page', pagingParam: 'page' });
    expect(configWith({ UPSTREAM_LIST_PAGING: 'page', UPSTREAM_LIST_PAGING_PARAM: 'p' }).listPaging.pagingParam).toBe('p');
  });

  it('reads the row-limit name and the page size', () => {
    const { listPaging } = configWith({ UPSTREAM_LIST_LIMIT_PARAM: 'page[size]', UPSTREAM_LIST_PAGE_SIZE: '100' });
    expect(listPaging).toMatchObject({ limitParam: 'page[size]', pageSize: 100 });
  });

  it('refuses a paging style, a name or a page size it cannot use, one line per variable', () => {
    expect(problemsOf({ UPSTREAM_LIST_PAGING: 'cursor', UPSTREAM_LIST_LIMIT_PARAM: 'status', UPSTREAM_LIST_PAGE_SIZE: '201' })).toEqual([
      'UPSTREAM_LIST_LIMIT_PARAM must not be status or isPublic',
      'UPSTREAM_LIST_PAGING must be offset or page',
      'UPSTREAM_LIST_PAGE_SIZE must be a whole number from 1 to 200',
    ]);
  });

  it('refuses the same name for the row limit and the paging parameter', () => {
    expect(problemsOf({ UPSTREAM_LIST_PAGING_PARAM: 'limit' })).toEqual([
      'UPSTREAM_LIST_PAGING_PARAM must differ from UPSTREAM_LIST_LIMIT_PARAM',
    ]);
  });
});
