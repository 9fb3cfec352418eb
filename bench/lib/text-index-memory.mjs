// Run by bench/scenarios/search.mjs as `node --expose-gc bench/lib/text-index-memory.mjs '<json>'`:
// builds the text index of a generated archive exactly as the service does when it reads the
// archive whole (a document per row, then the compaction that packs it), and prints one JSON line:
// the index's bytes as the service counts them, the heap and array-buffer growth it caused (after
// gc, the archive itself made before the first reading), its words, and the CPU the build took.
// Options: issues, htmlKiB, prose.
import { createArchive } from '../../build/test/support/fake-upstream/archive.js';
import { addSummary, compacted, createTextStore, textIndexBytes } from '../../dist/core/reads/text-index.js';

const options = JSON.parse(process.argv[2] ?? '{}');
if (typeof globalThis.gc !== 'function') throw new Error('run with --expose-gc');
const archive = createArchive({ issues: options.issues, contentBytes: options.htmlKiB * 1024, prose: options.prose });
const summaries = archive.issues.map((issue) => ({
  slug: issue.slug,
  subject: issue.subject,
  previewText: issue.previewText,
  thumbnailUrl: null,
  sentAt: issue.sentAt,
  updatedAt: issue.updatedAt,
  category: issue.category && { name: issue.category.name, slug: issue.category.slug },
  readingMinutes: null,
}));
const letterBytes = archive.issues.reduce((sum, issue) => sum + Buffer.byteLength(issue.contentHtml ?? ''), 0);

const measure = () => {
  globalThis.gc();
  globalThis.gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.arrayBuffers;
};
const before = measure();
const cpuBefore = process.cpuUsage();
let text = (() => {
  const store = createTextStore();
  const slots = new Map();
  archive.issues.forEach((issue, at) => {
    slots.set(issue.slug, addSummary(store, summaries[at], issue.updatedAt, issue.contentHtml));
  });
  return compacted({ store, slots });
})();
const cpu = process.cpuUsage(cpuBefore);
const after = measure();
process.stdout.write(
  `${JSON.stringify({
    issues: archive.issues.length,
    letterBytes,
    estimateBytes: textIndexBytes(text),
    measuredBytes: after - before,
    dictionaryWords: text.store.dictionary.size(),
    postingBytes: text.store.packed.bytes.byteLength,
    buildCpuMs: (cpu.user + cpu.system) / 1000,
  })}\n`,
);
text = undefined;
