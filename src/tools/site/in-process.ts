import { parseConfig } from '../../core/config/config.js';
import { createLogger } from '../../core/log.js';
import { createAppForConfig } from '../../core/service.js';

/**
 * The service inside the build's own process, configured from `env` as `npm start` would be
 * (NEWSLETTER_API_KEY, NEWSLETTER_API_BASE_URL, …), answering `fetch` calls without a socket:
 * a server-side build reads the upstream with the key and runs no service. The key stays in this
 * process: the build reads only the four routes' public shapes, and log lines are redacted.
 */
export function createInProcessService(
  env: Record<string, string | undefined>,
  options: { fetch?: typeof globalThis.fetch; write: (line: string) => void },
): typeof globalThis.fetch {
  // The build is the only reader here and no visitor's: the budget of cold reads visitors may
  // cause is not what should pace it (the upstream's own 429 and Retry-After still do).
  const parsed = parseConfig({ READ_BUDGET_PER_MINUTE: '100000', ...env });
  if (!parsed.ok) throw new Error(`the environment does not configure the service: ${parsed.problems.join('; ')}`);
  const log = createLogger({ write: options.write, redact: [parsed.config.apiKey, parsed.config.turnstileSecretKey] });
  const { app } = createAppForConfig(parsed.config, { log, fetch: options.fetch, clientIp: () => undefined });
  return (async (input: RequestInfo | URL, init?: RequestInit) => app.request(input, init)) as typeof globalThis.fetch;
}
