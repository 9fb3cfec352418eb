import { createHash } from 'node:crypto';
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/** One digest of the whole site (paths and bytes, in sorted order): deploy only when it changes. */
export function siteDigest(files: ReadonlyMap<string, string>): string {
  const hash = createHash('sha256');
  for (const path of [...files.keys()].sort()) {
    hash.update(`${path}\0${Buffer.byteLength(files.get(path)!)}\0`);
    hash.update(files.get(path)!);
  }
  return hash.digest('hex');
}

// A folder holding these two is a previous build, safe to replace whole.
const BUILD_MARKERS = ['sitemap.xml', '404.html'];

/** `outDir` must be missing, empty or a previous build, emptied first so an unpublished issue leaves no page. */
export async function writeSite(outDir: string, files: ReadonlyMap<string, string>): Promise<void> {
  const existing = await readdir(outDir).catch((error: NodeJS.ErrnoException): string[] => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  if (existing.length > 0) {
    if (!BUILD_MARKERS.every((marker) => existing.includes(marker))) {
      throw new Error(`${outDir} is not empty and is not a previous site build; choose an empty folder`);
    }
    await rm(outDir, { recursive: true });
  }
  for (const path of [...files.keys()].sort()) {
    const file = join(outDir, path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, files.get(path)!);
  }
}
