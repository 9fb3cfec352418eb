import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src', import.meta.url));
const LET = /^(?:export\s+)?(?:let|var)\s+(\w+)/;
// Made empty, to be filled: a lookup table made with its entries (`new Set(['br', 'gzip'])`) is a constant.
const CONTAINER = /^(?:export\s+)?const\s+(\w+)\b[^=]*=\s*new\s+(LRUCache\b|(?:Map|Set|WeakMap|WeakSet|Array)\b(?:<[^(]*>)?\(\))/;
/^(?:export\s+)?const\s+(\w+)\b[^=]*=\s*new\s+(Map|Set|WeakMap|WeakSet|Array|LRUCache)\b(?:<[^(]*>)?\((?:\)|(?<=LRUCache\S*\())/;

/**
 * Top-level declarations that hold state shared by every app of a process: `let`/`var`, or a container made at import.
 * Biome starts every top-level statement at the line's start; lines inside a template literal (a page's script) are skipped.
 */
function moduleStateIn(source: string): string[] {
  const found: string[] = [];
  let inTemplate = false;
  for (const line of source.split('\n')) {
    if (!inTemplate) {
      const declared = LET.exec(line);
      const made = CONTAINER.exec(line);
      if (declared) found.push(`let ${declared[1]}`);
      else if (made) found.push(`const ${made[1]} = new ${/^\w+/.exec(made[2]!)![0]}`);
    }
    if ((line.replace(/\\./g, '').match(/`/g)?.length ?? 0) % 2 === 1) inTemplate = !inTemplate;
  }
  return found;
}

describe('module-level state', () => {
  it('finds a container made at import and a top-level let, and leaves constants and factories alone', () => {
    const source = [
      'const seen = new WeakSet<object>();',
      'let count = 0;',
      "const FORMATS = ['json', 'atom'] as const;",
      "const CODINGS = new Set(['br', 'gzip']);",
      'const pages = new LRUCache<string, string>({ max: 10 });',
      "const dateFormat = new Intl.DateTimeFormat('en-GB');",
      'export function createThing() {',
      '  const kept = new Map();',
      '  let n = 0;',
      '  return { kept, n };',
      '}',
      'const SCRIPT = `',
      'let page = 1;',
      '`;',
      'export let shared = new Map();',
    ].join('\n');
    expect(moduleStateIn(source)).toEqual(['const seen = new WeakSet', 'let count', 'const pages = new LRUCache', 'let shared']);
  });

  it('is found nowhere in src/: each app keeps its state in what its factories made', () => {
    const found: string[] = [];
    for (const entry of readdirSync(SRC, { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
      const file = join(entry.parentPath, entry.name);
      for (const state of moduleStateIn(readFileSync(file, 'utf8'))) found.push(`${relative(SRC, file)}: ${state}`);
    }
    expect(found).toEqual([]);
  });
});
