import type { Logger } from '../log.js';
import type { ArchiveRead } from './archive.js';
import { KNOWN_ISSUE_STATUSES, KNOWN_SUBSCRIBER_STATUSES } from './schemas.js';

/** Dropped rows named in one log line at most; the count says how many there were. */
const MAX_NAMED_IDS = 10;
/** New states remembered per process: an upstream inventing states cannot grow this without end. */
const MAX_NOTED_STATES = 64;

/**
 * What the upstream does that its documentation does not say, told to the owner without
 * failing a visitor: rows dropped as malformed and signs that paging is not working (one `warn`
 * line per load each), and a state we do not know (one `info` line per process).
 */
export function createUpstreamNotices(log: Logger | undefined) {
  const noted = new Set<string>();

  function newState(resource: 'issue' | 'subscriber', known: ReadonlySet<string>, status: string | undefined): void {
    if (!log || status === undefined || known.has(status)) return;
    const key = `${resource}:${status}`;
    if (noted.has(key) || noted.size >= MAX_NOTED_STATES) return;
    noted.add(key);
    // A state name is the upstream's word, not a visitor's data; it is cut short all the same.
    log.log('info', 'upstream_unknown_status', { resource, status: status.slice(0, 40) });
  }

  return {
    issueStatus: (status: string) => newState('issue', KNOWN_ISSUE_STATUSES, status),
    subscriberStatus: (status: string | undefined) => newState('subscriber', KNOWN_SUBSCRIBER_STATUSES, status),

    /** Rows that failed their schema: counted, named by id, never shown. */
    dropped(operation: 'listIssues' | 'listCategories', count: number, ids: readonly (string | undefined)[]): void {
      if (!log || count === 0) return;
      const named = ids.filter((id): id is string => id !== undefined).slice(0, MAX_NAMED_IDS);
      log.log('warn', 'upstream_rows_dropped', { operation, count, ids: named.join(',') || undefined });
    },

    /** One line per archive load, with everything paging looked wrong in and what to set. */
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
