import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it, expect } from 'vitest';

// Node only: measured in a process of its own started with --expose-gc, on the built module
// (test/build-dist.ts builds dist/ before the suites), so nothing of the runner holds the text.
const SCANNER = new URL('../../dist/core/upstream/row-scanner.js', import.meta.url).href;
const MIB = 1024 * 1024;

/** ~20 MB of page text of 200 rows, of which ~10 KB is kept; prints the heap each way of reading leaves. */
const PROBE = `
import { parseRowList } from ${JSON.stringify(SCANNER)};
const filler = 'y'.repeat(100 * 1024);
function pageText() {
  const rows = Array.from({ length: 200 }, (_, i) => '{"id":"i' + i + '","subject":"subject ' + i + ' ' + 's'.repeat(40) + '","contentJson":"' + filler + '"}');
  return '{"ok":true,"data":[' + rows.join(',') + ']}';
}
const ways = {
  scanned: (text) => parseRowList(text, new Set(['id', 'subject'])).data,
  sliced: (text) => Array.from(text.matchAll(/"subject":"([^"]*)"/g), (m) => text.slice(m.index + 11, m.index + 11 + m[1].length)),
};
// The text is made and read in a frame of its own: a frame still running may hold it.
const readPage = (read) => read(pageText());
const left = {};
for (const [name, read] of Object.entries(ways)) {
  gc();
  const before = process.memoryUsage().heapUsed;
  const kept = readPage(read);
  gc();
  left[name] = { retained: process.memoryUsage().heapUsed - before, rows: kept.length };
}
process.stdout.write(JSON.stringify(left));
`;

describe('the memory a list page read leaves', () => {
  it('keeps copies of the strings it keeps, not slices that would hold the whole page text alive', () => {
    const output = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', PROBE], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      encoding: 'utf8',
    });
    const left = JSON.parse(output) as Record<'scanned' | 'sliced', { retained: number; rows: number }>;
    expect(left.scanned.rows).toBe(200);
    expect(left.scanned.retained).toBeLessThan(4 * MIB);
    // The measure can tell: subjects kept as slices of the text hold all of it.
    expect(left.sliced.rows).toBe(200);
    expect(left.sliced.retained).toBeGreaterThan(16 * MIB);
  });
});
