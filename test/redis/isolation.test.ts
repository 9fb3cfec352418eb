import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const src = fileURLToPath(new URL('../../src', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sourceFiles(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );
}

/** Runtime imports of the Redis code (type-only imports vanish when compiled). */
const REDIS_IMPORT =
  /^import (?!type )[^;]*from '(?:@redis\/client|\.{1,2}\/(?:[\w.-]+\/)*redis\/[\w.-]+)'|import\('(?:@redis\/client|[^']*redis\/[\w.-]+)'\)/gm;

describe('the Redis code outside src/node/redis/', () => {
  it('is reached only by the Node entry, through a dynamic import, so nothing else loads the client', () => {
    const importers: string[] = [];
    for (const file of sourceFiles(src)) {
      const path = relative(src, file);
      if (path.startsWith('node/redis/')) continue;
      for (const match of readFileSync(file, 'utf8').matchAll(REDIS_IMPORT)) importers.push(`${path}: ${match[0]}`);
    }
    expect(importers).toEqual(["node.ts: import('./node/redis/services.js')"]);
  });
});
