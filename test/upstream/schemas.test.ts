import { describe, it, expect } from 'vitest';
import { IssueEnvelope, UpstreamCategorySchema } from '../../src/core/upstream/schemas.js';

describe('upstream schemas', () => {
  it('describe a body of the wrong shape in English words without any other module loaded', () => {
    const result = IssueEnvelope.safeParse({ ok: true, data: { id: 'iss_1', status: 'sent' } });
    expect(result.success).toBe(false);
    expect(result.error?.issues.map((issue) => [issue.path.join('.'), issue.message])).toEqual([
      ['data.subject', 'Invalid input: expected string, received undefined'],
    ]);
  });

  it('strip the fields we do not read', () => {
    const category = { id: 'cat_1', name: 'Guides', slug: 'guides', workspaceId: 'ws_1' };
    expect(UpstreamCategorySchema.parse(category)).toEqual({ name: 'Guides', slug: 'guides' });
  });
});
