import { readFile, writeFile } from 'node:fs/promises';
import { createOpenApiDocument, serializeOpenApiDocument } from './document.js';

async function main(): Promise<void> {
  const root = new URL('../../../', import.meta.url);
  const { version } = JSON.parse(await readFile(new URL('package.json', root), 'utf8')) as { version: string };
  const target = new URL('openapi.json', root);
  const text = serializeOpenApiDocument(createOpenApiDocument(version));
  const before = await readFile(target, 'utf8').catch(() => '');
  if (before === text) {
    process.stdout.write(`openapi.json is up to date (${text.length} bytes)\n`);
    return;
  }
  await writeFile(target, text);
  process.stdout.write(`openapi.json written (${before.length} -> ${text.length} bytes)\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`openapi.json was not written: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
