import type { Logger } from '../log.js';
import type { ArchiveRead } from './archive.js';
import { KNOWN_ISSUE_STATUSES, KNOWN_SUBSCRIBER_STATUSES } from './schemas.js';

const MAX_NAMED_IDS = 10;
/** Bounded: an upstream inventing states cannot grow this without end. */
const MAX_NOTED_STATES = 64;

/** What the upstream does that its documentation does not say, told to the owner without failing a visitor. */
export function createUpstreamNotices(log: Logger | undefined) {
  const noted = new Set<string>();

  function newState(resource: 'issue' | 'subscriber', known: ReadonlySet<string>, status: string | undefined): void {
    if (!log || status === undefined || known.has(status)) return;
    const key = `${resource}:${status}`;
    if (noted.has(key) || noted.size >= MAX_NOTED_STATES) return;
    noted.add(key);
    log.log('info', 'upstream_unknown_status', { resource, status: status.slice(0, 40) });
  }

  return {
    issueStatus: (status: string) => newState('issue', KNOWN_ISSUE_STATUSES, status),
    subscriberStatus: (status: string | undefined) => newState('subscriber', KNOWN_SUBSCRIBER_STATUSES, status),

    dropped(operation: 'listIssues' | 'listCategories', count: number, ids: readonly (string | undefined)[]): void {
      if (!log || count === 0) return;
      const named = ids.filter((id): id is string => id !== undefined).slice(0, MAX_NAMED_IDS);
      log.log('warn', 'upstream_rows_dropped', { operation, count, ids: named.join(',') || undefined });
    },

    paging(read: ArchiveRead<unknown>): void {
      if (!log || read.findings.length === 0) return;
      log.log('warn', 'upstream_paging', {
        problems: read.findings.map((finding) => finding.problem).join(','),
        seen: read.findings.map((finding) => finding.seen).join('; '),
        set: read.findings.map((finding) => finding.set).join('; '),
        calls: read.pageRows.length,
        issues: read.issues.length,
      });
    },
  };
}
