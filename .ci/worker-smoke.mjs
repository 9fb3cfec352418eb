// Smoke test of `wrangler dev`: the Worker in the local Workers runtime, demo mode, on
// 127.0.0.1; the four routes answer; then it is stopped by PID. Bounded in time throughout.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';

const port = await new Promise((resolve) => {
  const server = createServer().listen(0, '127.0.0.1', () => {
    const { port: free } = server.address();
    server.close(() => resolve(free));
  });
});
const base = `http://127.0.0.1:${port}`;
const child = spawn(
  './node_modules/.bin/wrangler',
  ['dev', '--ip', '127.0.0.1', '--port', String(port), '--var', 'NODE_ENV:development', '--var', `ALLOWED_ORIGINS:${base}`],
  {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      WRANGLER_SEND_METRICS: 'false',
      WRANGLER_SEND_ERROR_REPORTS: 'false',
      WRANGLER_HIDE_BANNER: 'true',
      CLOUDFLARE_CF_FETCH_ENABLED: 'false',
    },
  },
);
let output = '';
child.stdout.on('data', (chunk) => (output += chunk));
child.stderr.on('data', (chunk) => (output += chunk));

const failures = [];
function check(name, condition) {
  console.log(`${condition ? 'ok  ' : 'FAIL'} ${name}`);
  if (!condition) failures.push(name);
}

try {
  const deadline = Date.now() + 60_000;
  let ready = false;
  while (!ready && Date.now() < deadline) {
    ready = await fetch(`${base}/api/categories`).then(
      (response) => response.ok,
      () => false,
    );
    if (!ready) await new Promise((resolve) => setTimeout(resolve, 500));
  }
  check('wrangler dev answers within 60 s', ready);
  if (ready) {
    const list = await fetch(`${base}/api/issues?limit=2`);
    const listBody = await list.json();
    check('GET /api/issues → 200 with two summaries', list.status === 200 && listBody.data.length === 2);
    const slug = listBody.data[0]?.slug;
    const issue = await fetch(`${base}/api/issues/${slug}`);
    check(
      'GET /api/issues/:slug → 200 with contentHtml',
      issue.status === 200 && typeof (await issue.json()).data.contentHtml === 'string',
    );
    const categories = await fetch(`${base}/api/categories`);
    check('GET /api/categories → 200', categories.status === 200 && Array.isArray((await categories.json()).data));
    const subscribe = await fetch(`${base}/api/subscribe`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Origin: base },
      body: JSON.stringify({ email: 'smoke@example.com', optInAttestation: true }),
    });
    check('POST /api/subscribe → 200 accepted', subscribe.status === 200 && (await subscribe.json()).data.accepted === true);
    const refused = await fetch(`${base}/api/subscribe`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email: 'smoke@example.com', optInAttestation: false }),
    });
    check('POST /api/subscribe without attestation → 422', refused.status === 422);
    check('unknown path → JSON 404', (await fetch(`${base}/api/subscribers`)).status === 404);
  }
} finally {
  child.kill('SIGTERM');
  const exited = await Promise.race([
    new Promise((resolve) => child.once('exit', () => resolve(true))),
    new Promise((resolve) => setTimeout(() => resolve(false), 10_000)),
  ]);
  if (!exited) child.kill('SIGKILL');
}
if (failures.length > 0) {
  console.error(output.slice(-4000));
  console.error(`${failures.length} smoke check(s) failed`);
  process.exit(1);
}
console.log('wrangler dev smoke test passed');
