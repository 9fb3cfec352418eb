import { parseConfig } from '../../core/config/config.js';
import { createLogger } from '../../core/log.js';
import { createAppForConfig } from '../../core/service.js';

/** The service in the build's own process, configured from `env` as `npm start` would be, for a build that reads the upstream itself. */
export function createInProcessService(
  env: Record<string, string | undefined>,
  options: { fetch?: typeof globalThis.fetch; write: (line: string) => void },
): typeof globalThis.fetch {
  // No visitor here: the visitors' read budget must not pace the build (the upstream's 429 still does).
  const parsed = parseConfig({ READ_BUDGET_PER_MINUTE: '100000', ...env });
  if (!parsed.ok) throw new Error(`the environment does not configure the service: ${parsed.problems.join('; ')}`);
  const log = createLogger({ write: options.write, redact: [parsed.config.apiKey, parsed.config.turnstileSecretKey] });
  const { app } = createAppForConfig(parsed.config, { log, fetch: options.fetch, clientIp: () => undefined });
  return (async (input: RequestInfo | URL, init?: RequestInit) => app.request(input, init)) as typeof globalThis.fetch;
}
