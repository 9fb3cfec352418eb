import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src', import.meta.url));

/** Every module of src/ with the modules of src/ it imports or re-exports, type-only ones included. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const entry of readdirSync(SRC, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = join(entry.parentPath, entry.name);
    const text = readFileSync(file, 'utf8');
    const imported = [...text.matchAll(/^(?:import|export)\b[^;]*?from\s+'(\.{1,2}\/[^']+)'/gm)].map((match) =>
      resolve(dirname(file), match[1]!.replace(/\.js$/, '.ts')),
    );
    graph.set(file, imported);
  }
  return graph;
}

/** The import cycles of `graph`, each as the modules along it. */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (module: string) => {
    if (path.includes(module)) {
      cycles.push([...path.slice(path.indexOf(module)), module].map((file) => relative(SRC, file)));
      return;
    }
    if (done.has(module) || !graph.has(module)) return;
    path.push(module);
    for (const next of graph.get(module)!) visit(next);
    path.pop();
    done.add(module);
  };
  for (const module of graph.keys()) visit(module);
  return cycles;
}

describe('the modules of src/', () => {
  it('import one another without a cycle, type-only imports included', () => {
    const graph = importGraph();
    expect(graph.size).toBeGreaterThan(50);
    expect(cyclesOf(graph)).toEqual([]);
  });

  it('finds a cycle where there is one', () => {
    const graph = new Map([
      ['/a.ts', ['/b.ts']],
      ['/b.ts', ['/c.ts']],
      ['/c.ts', ['/a.ts']],
    ]);
    expect(cyclesOf(graph)).toHaveLength(1);
  });
});
