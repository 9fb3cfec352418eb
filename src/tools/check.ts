import { parseConfig, type Config, type ConfigSource } from '../core/config/config.js';
import { createRedactor, type Logger } from '../core/log.js';
import { isPublicIssue } from '../core/reads/allow-list.js';
import type { ArchiveRead } from '../core/upstream/archive.js';
import { createUpstreamForConfig } from '../core/upstream/newsletter-api.js';
import { UpstreamError } from '../core/upstream/transport.js';
import { UPSTREAM_HINTS } from '../core/upstream/failure-policy.js';
import { createMemoryHoldOff } from '../core/upstream/hold-off.js';

// `npm run check`: asks the configured upstream, read-only, whether what the site needs works. It never creates a subscriber.

// `fail`: the site would break or be cut short; `note`: nothing breaks.
type CheckFinding = { status: 'ok' | 'fail' | 'note'; message: string };
type CheckDeps = { fetch?: typeof globalThis.fetch; now?: () => number; sleep?: (ms: number) => Promise<void> };

// The pauses after its own failed calls are waited out; a 429's longer `Retry-After` is reported instead.
const CHECK_WAITS_OUT_MS = 10_000;

const ok = (message: string): CheckFinding => ({ status: 'ok', message });
const fail = (message: string): CheckFinding => ({ status: 'fail', message });
const note = (message: string): CheckFinding => ({ status: 'note', message });

function failureMessage(call: string, error: unknown): string {
  if (!(error instanceof UpstreamError)) return `${call} failed unexpectedly`;
  if (error.kind === 'auth') return `${call}: ${UPSTREAM_HINTS.rejectedKey} (401)`;
  if (error.kind === 'not_found') return `${call} answered ${error.status ?? 'not found'}: ${UPSTREAM_HINTS.readPathMissing}`;
  return `${call} failed: ${error.message}`;
}

function judgeProbe(probe: ArchiveRead, config: Config): CheckFinding[] {
  const { limitParam, pagingParam, style } = config.listPaging;
  const [first = 0, second] = probe.pageRows;
  const paging = `paging by ${style} under ${pagingParam}`;
  if (first === 0) return [note('the archive is empty, so the row limit and paging cannot be checked yet')];
  if (first > 1) return [fail(`List Issues ignored ${limitParam}=1 (${first} rows): UPSTREAM_LIST_LIMIT_PARAM must name its limit`)];
  const limit = ok(`the row-limit parameter ${limitParam} is honoured (asked 1 row, got 1)`);
  if (probe.findings.some((finding) => finding.problem === 'repeated_page')) {
    const set = 'Set UPSTREAM_LIST_PAGING (offset or page) and UPSTREAM_LIST_PAGING_PARAM';
    return [limit, fail(`${paging} does not work: the second row came back as the first. ${set}`)];
  }
  if (!second) return [limit, note('the archive has one row, so paging cannot be checked yet')];
  return [limit, ok(`${paging} works (the next position answered the next row)`)];
}

function judgeArchive(read: ArchiveRead, ms: number, config: Config): CheckFinding[] {
  const publicIssues = read.issues.filter(isPublicIssue).length;
  const { count, ids } = read.dropped;
  const pages = `rows per page: ${read.pageRows.join(', ')}; ${config.listPaging.pageSize} asked`;
  const shownIds = ids.slice(0, 10).join(', ');
  const unserved = read.issues.length - publicIssues;
  return [
    ok(`the archive: ${publicIssues} public sent issues in ${read.pageRows.length} calls, ${ms} ms (${pages})`),
    ...read.findings.map((finding) => fail(`${finding.seen}: set ${finding.set}`)),
    count > 0
      ? fail(`${count} malformed issue ${count === 1 ? 'row' : 'rows'} dropped, not served${shownIds ? ` (ids ${shownIds})` : ''}`)
      : ok('no malformed issue rows dropped'),
    ...(unserved > 0 ? [note(`${unserved} rows are not served: not sent, not public, or without a usable slug`)] : []),
  ];
}

export async function runCheck(config: Config, deps: CheckDeps = {}) {
  const now = deps.now ?? Date.now;
  const timed = async <T>(call: () => Promise<T>) => {
    const started = now();
    return { value: await call(), ms: Math.round(now() - started) };
  };
  const demo = 'demo mode (NEWSLETTER_API_KEY and NEWSLETTER_API_BASE_URL unset): checking the demo upstream';
  const findings: CheckFinding[] = config.mode === 'demo' ? [note(demo)] : [];
  const told: CheckFinding[] = [];
  // What the service would log (dropped categories, new states) becomes findings.
  const log: Logger = {
    log: (_level, event, { count, ids, operation, resource, status } = {}) => {
      if (event === 'upstream_rows_dropped' && operation === 'listCategories')
        told.push(fail(`${String(count)} malformed category rows dropped, not served${ids ? ` (ids ${String(ids)})` : ''}`));
      if (event === 'upstream_unknown_status')
        told.push(note(`the upstream answered a ${String(resource)} state it does not document: ${String(status)} (accepted)`));
    },
  };
  // One hold-off for both clients: a one-shot probe backs off as the service does.
  const backOff = { holdOff: createMemoryHoldOff(now), waitWhenHeldOffMs: CHECK_WAITS_OUT_MS, sleep: deps.sleep, fetch: deps.fetch, now };
  const client = createUpstreamForConfig(config, { log, ...backOff });
  const probeClient = createUpstreamForConfig({ ...config, listPaging: { ...config.listPaging, pageSize: 1 } }, backOff);

  try {
    const { value, ms } = await timed(() => client.listCategories());
    findings.push(ok(`the key is accepted (List Categories answered in ${ms} ms)`), ok(`categories: ${value.length}`));
  } catch (error) {
    findings.push(fail(failureMessage('List Categories', error)));
    if (error instanceof UpstreamError && (error.kind === 'auth' || error.kind === 'not_found')) return findings;
  }
  try {
    const probe = await timed(() => probeClient.readArchive(2));
    findings.push(...judgeProbe(probe.value, config).map((finding) => ({ ...finding, message: `${finding.message} (${probe.ms} ms)` })));
    const archive = await timed(() => client.readArchive(config.archiveMaxIssues));
    findings.push(...judgeArchive(archive.value, archive.ms, config));
    const first = archive.value.issues.find(isPublicIssue);
    if (first) {
      const issue = await timed(() => client.getIssueBySlug(first.slug));
      findings.push(ok(`Get Issue By Slug answered ${first.slug} in ${issue.ms} ms`));
    }
  } catch (error) {
    findings.push(fail(failureMessage('List Issues or Get Issue By Slug', error)));
  }
  return [...findings, ...told];
}

const LABELS = { ok: 'ok  ', fail: 'FAIL', note: 'note' } as const;
const SUMMARIES = {
  0: 'everything the site needs works',
  1: 'something above would break or cut short the site',
  2: 'the configuration is invalid; nothing was checked (see README.md "Configuration")',
} as const;

export async function main(options: CheckDeps & { env: ConfigSource; write: (line: string) => void }): Promise<number> {
  const parsed = parseConfig(options.env);
  const findings = parsed.ok ? await runCheck(parsed.config, options) : parsed.problems.map((problem) => fail(`config error: ${problem}`));
  const failures = findings.filter((finding) => finding.status === 'fail').length;
  const exitCode = !parsed.ok ? 2 : failures > 0 ? 1 : 0;
  // No finding holds the key: the last line of defence.
  const redact = createRedactor([options.env.NEWSLETTER_API_KEY]);
  for (const { status, message } of findings) options.write(redact(`${LABELS[status]}  ${message}`));
  options.write(redact(`check: ${SUMMARIES[exitCode]} (${failures} failing, exit ${exitCode})`));
  return exitCode;
}
