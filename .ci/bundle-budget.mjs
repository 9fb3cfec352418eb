// Bundles the Worker as `wrangler deploy` would (dry run, nothing uploaded) and holds its
// gzipped size under the budget. Prints raw and gzip sizes.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const BUDGET_GZIP_BYTES = 150 * 1024;
const outdir = mkdtempSync(join(tmpdir(), 'newsletter-bff-bundle-'));
try {
  execFileSync('./node_modules/.bin/wrangler', ['deploy', '--dry-run', '--outdir', outdir], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      WRANGLER_SEND_METRICS: 'false',
      WRANGLER_SEND_ERROR_REPORTS: 'false',
      WRANGLER_HIDE_BANNER: 'true',
      CLOUDFLARE_CF_FETCH_ENABLED: 'false',
    },
  });
  const bundle = readFileSync(join(outdir, 'worker.js'));
  const gzip = gzipSync(bundle, { level: 9 }).length;
  const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
  console.log(`worker bundle: ${kib(bundle.length)} raw, ${kib(gzip)} gzip (budget ${kib(BUDGET_GZIP_BYTES)} gzip)`);
  // prom-client is for the Node entry's admin listener only (src/admin/): the Worker must never reach it.
  if (bundle.includes('# HELP ')) {
    console.error('worker bundle contains prom-client (an import of src/admin/ reached the Worker entry)');
    process.exitCode = 1;
  }
  // The Redis client is for Node instances only (src/redis/, imported dynamically by node.ts).
  if (bundle.includes('createRedisLink') || bundle.includes('sendCommand')) {
    console.error('worker bundle contains the Redis client (an import of src/redis/ reached the Worker entry)');
    process.exitCode = 1;
  }
  // openapi.json is generated at build time (src/tools/openapi/): neither the generator nor zod's
  // JSON Schema output, which names its draft, belongs in the Worker.
  if (bundle.includes('draft-2020-12')) {
    console.error("worker bundle contains zod's JSON Schema output (src/tools/openapi/ or z.toJSONSchema reached the Worker entry)");
    process.exitCode = 1;
  }
  if (gzip > BUDGET_GZIP_BYTES) {
    console.error('worker bundle is over its gzip budget');
    process.exitCode = 1;
  }
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
