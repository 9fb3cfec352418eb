import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Vitest global setup of the `node` project: compiles dist/ once, from scratch, as `npm start`
 * and `npm pack` do, before any suite spawns it — so no suite rebuilds it while another runs it.
 */
export default function buildDist(): void {
  const root = fileURLToPath(new URL('..', import.meta.url));
  rmSync(`${root}/dist`, { recursive: true, force: true });
  execFileSync(process.execPath, [`${root}/node_modules/typescript/bin/tsc`, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'pipe' });
}
