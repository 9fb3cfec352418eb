import { describe, it, expect } from 'vitest';
import { parseRowList, skipValue } from '../../src/core/upstream/row-scanner.js';
import { jsonResponse } from '../helpers.js';
import { firstListPage, setupClient, upstreamIssue } from './fixtures.js';

const FIELDS: ReadonlySet<string> = new Set(['id', 'subject', 'contentHtml', 'category']);

/** What JSON.parse makes of `text`, with each object row cut to FIELDS, as parseRowList should make it. */
function expected(text: string): unknown {
  const parsed = JSON.parse(text) as Record<string, unknown>;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return parsed;
  const envelope: Record<string, unknown> = {};
  if ('ok' in parsed) envelope.ok = parsed.ok;
  if ('data' in parsed) {
    envelope.data = Array.isArray(parsed.data)
      ? parsed.data.map((row: unknown) =>
          typeof row === 'object' && row !== null && !Array.isArray(row)
            ? Object.fromEntries(Object.entries(row).filter(([name]) => FIELDS.has(name)))
            : null,
        )
      : parsed.data;
  }
  return envelope;
}

/** A value nested `depth` arrays and objects deep, as text. */
const deeplyNested = (depth: number) => `${'[{"a":'.repeat(depth)}1${'}]'.repeat(depth)}`;

describe('reading a list page without building the members it does not keep', () => {
  it('matches JSON.parse for what it keeps, whatever the members it leaves out hold', () => {
    const texts = [
      '{"ok":true,"data":[]}',
      ' { "ok" : true , "data" : [ { "id" : "a" , "subject" : "S\\u00e9\\n\\"q\\"" , "contentJson" : {"x":[1,-2.5e+3,true,false,null,"\\\\"]} } ] } ',
      '{"data":[{"id":"a","contentHtml":"<p>é 😀</p>","category":{"name":"N","slug":"n"},"extra":[[],{}]}],"ok":true,"meta":{"total":1}}',
      '{"ok":true,"data":[1,"row",null,[{"id":"x"}],{"id":"b"}]}',
      '{"ok":true,"data":{"id":"not a list"}}',
      '{"ok":true,"data":[{"id":"first","id":"second"}],"data":[{"id":"last"}]}',
      '[{"id":"not an envelope"}]',
      '"just a string"',
      '{}',
    ];
    for (const text of texts) expect(parseRowList(text, FIELDS)).toEqual(expected(text));
  });

  it('refuses text that is not JSON, as JSON.parse does, also where the fault lies in a member it leaves out', () => {
    const broken = [
      '',
      '{"ok":true,"data":[{"id":"a","contentJson":{"x":[1,2}}]}',
      '{"ok":true,"data":[{"id":"a","contentJson":{"x":01}}]}',
      '{"ok":true,"data":[{"id":"a","contentJson":"tab\there"}]}',
      '{"ok":true,"data":[{"id":"a","contentJson":"\\x"}]}',
      '{"ok":true,"data":[{"id":"a","contentJson":tru}]}',
      '{"ok":true,"data":[{"id":"a","contentJson":{"k" 1}}]}',
      '{"ok":true,"data":[{"id":"a",}]}',
      '{"ok":true,"data":[{"id":"a"}]} trailing',
      '{"ok":true,"data":[{"id":"a"}]',
      '{"ok":true,"meta":[1,,2],"data":[]}',
      `{"ok":true,"data":[{"id":"a","contentJson":${'['.repeat(10_000)}}]}`,
    ];
    for (const text of broken) {
      expect(() => JSON.parse(text), text).toThrow(SyntaxError);
      expect(() => parseRowList(text, FIELDS), text).toThrow(SyntaxError);
    }
  });

  it('steps over an editor state nested far deeper than a recursive parser could follow', () => {
    const depth = 200_000;
    const text = `{"ok":true,"data":[{"id":"a","contentJson":${deeplyNested(depth)}},{"id":"b"}]}`;
    expect(parseRowList(text, FIELDS)).toEqual({ ok: true, data: [{ id: 'a' }, { id: 'b' }] });
    expect(skipValue(deeplyNested(depth), 0)).toBe(deeplyNested(depth).length);
  });

  it('reads rows of a page through the client with their editor state left out and a malformed row dropped, not fatal', async () => {
    const rows = [
      { ...upstreamIssue(1), contentJson: { type: 'doc', content: [{ type: 'paragraph', text: 'x'.repeat(100_000) }] } },
      { ...upstreamIssue(2), contentJson: deeplyNested(50_000) },
      upstreamIssue(3, { subject: 12 }),
    ];
    const { client } = setupClient(() => jsonResponse({ ok: true, data: rows }));
    const issues = await firstListPage(client);
    expect(issues.map((issue) => issue.id)).toEqual(['iss_0001', 'iss_0002']);
    for (const issue of issues) expect(issue).not.toHaveProperty('contentJson');
  });
});
