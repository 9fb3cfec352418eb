// One HTTP request from the orchestrator (warm-ups, checks, the stampede and stale scenarios).
import { request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';

export function get(agent, url, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = httpRequest(url, { method, headers, agent, timeout: 30_000 }, (res) => {
      const chunks = [];
      res.on('data', (chunk) => chunks.push(chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          ms: performance.now() - started,
        }),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`timeout: ${method} ${url}`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** Headers Node writes by itself: left out when a reference is to send what ours sent. */
const NODE_WRITTEN_HEADERS = ['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding'];

/** The headers of `answer` a reference server should send as constants, without Node's own and `leaveOut`. */
export function headersToReplay(headers, leaveOut = []) {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !NODE_WRITTEN_HEADERS.includes(name) && !leaveOut.includes(name)));
}
