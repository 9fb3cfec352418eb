import { DEMO_ACCOUNT_SET_ID, DEMO_WORKSPACE_ID, createSamplePublication } from '../../src/demo/sample-publication.js';
import { FAKE_UPSTREAM_ERROR_TEXT } from '../support/fake-upstream/faults.js';

/**
 * The leak scan: every response (status line, headers, body) and every log line the fault and
 * fuzz suites produce is searched for things that must never leave the service (docs/contract.md
 * "Errors we return" and "Upstream calls"). Both suites run the fake upstream over the sample
 * publication, whose records carry these internal values, so finding none means none was passed through.
 */

/** A fake key, distinctive enough that a match can only be a leak. */
export const LEAK_API_KEY = 'fault-fuzz-key-3e9b71c4-not-real';

/** Internal values the upstream sends and the public shapes must drop (docs/upstream.md "Issue"). */
export const INTERNAL_VALUES = {
  workspaceId: DEMO_WORKSPACE_ID,
  accountSetId: DEMO_ACCOUNT_SET_ID,
  createdBy: createSamplePublication().issues[0]!.createdBy,
  /** Record ids as the sample publication and the demo upstream number them. */
  issueId: /\biss_\d{4}\b/,
  categoryId: /\bcat_\d{2}\b/,
  subscriberId: /\bsub_(?:\d{4}|blocked)\b/,
  /** The start of every sample issue's contentJson, which has no public counterpart. */
  contentJson: '{"type":"doc","version":1,',
  /** The upstream's own error text: our messages are our own words. */
  errorText: FAKE_UPSTREAM_ERROR_TEXT,
} as const;

/** Headers the fault upstreams send on every answer; no upstream header may be passed back. */
export const UPSTREAM_HEADERS = { 'Set-Cookie': 'upstream=secret', 'X-Upstream-Internal': 'leak' } as const;

/** Upstream-only field names (Issue, IssueStats, Category, Subscriber). */
const INTERNAL_FIELD_NAMES = [
  'workspaceId',
  'accountSetId',
  'createdBy',
  'contentJson',
  'scheduledFor',
  'newSubscriberCount',
  'subscriberCountTargeted',
  'sentCount',
  'deliveredCount',
  'openedCount',
  'clickedCount',
  'bouncedCount',
  'complainedCount',
  'failedCount',
  'emailNormalized',
  'emailOriginal',
];

interface Rule {
  label: string;
  test: (text: string) => boolean;
}

const includes = (needle: string) => (text: string) => text.includes(needle);
const includesIgnoringCase = (needle: string) => (text: string) => text.toLowerCase().includes(needle.toLowerCase());

const RULES: Rule[] = [
  { label: 'API key', test: includes(LEAK_API_KEY) },
  // The key's first and last halves, in case something slices or re-encodes it.
  { label: 'API key (fragment)', test: includes(LEAK_API_KEY.slice(0, 16)) },
  { label: 'API key (base64)', test: includes(Buffer.from(LEAK_API_KEY).toString('base64').slice(0, 24)) },
  ...INTERNAL_FIELD_NAMES.map((name) => ({ label: `internal field ${name}`, test: includes(name) })),
  { label: 'workspace id', test: includes(INTERNAL_VALUES.workspaceId) },
  { label: 'account set id', test: includes(INTERNAL_VALUES.accountSetId) },
  { label: 'creator id', test: includes(INTERNAL_VALUES.createdBy) },
  { label: 'upstream issue id', test: (text) => INTERNAL_VALUES.issueId.test(text) },
  { label: 'upstream category id', test: (text) => INTERNAL_VALUES.categoryId.test(text) },
  { label: 'upstream subscriber id', test: (text) => INTERNAL_VALUES.subscriberId.test(text) },
  { label: 'contentJson body', test: includes(INTERNAL_VALUES.contentJson) },
  { label: 'upstream error text', test: includes(INTERNAL_VALUES.errorText) },
  { label: 'upstream Set-Cookie', test: includes(UPSTREAM_HEADERS['Set-Cookie']) },
  { label: 'upstream header name', test: includesIgnoringCase('x-upstream-internal') },
  // A V8 stack frame: "    at fn (file:line:col)" or "    at file:line:col".
  { label: 'stack trace', test: (text) => /\bat (?:\S+ \()?(?:file:|node:|\/)[^\s)]*:\d+:\d+\)?/.test(text) },
];

/** Labels of every rule `text` breaks (empty when clean). */
export function findLeaks(text: string): string[] {
  return RULES.filter((rule) => rule.test(text)).map((rule) => rule.label);
}

/** A response as it went over the wire: status line, every header, then the body. */
export function responseText(response: Response, body: string): string {
  const headers = [...response.headers].map(([name, value]) => `${name}: ${value}`).join('\n');
  return `${response.status} ${response.statusText}\n${headers}\n\n${body}`;
}

export interface Finding {
  source: string;
  leaks: string[];
  excerpt: string;
}

/** Collects texts from a suite and reports every one that leaks something. */
export function createLeakScanner() {
  const findings: Finding[] = [];
  let scanned = 0;
  return {
    /** Scans one response or log text now; `source` says where it came from. */
    scan(source: string, text: string): void {
      scanned += 1;
      const leaks = findLeaks(text);
      if (leaks.length > 0) findings.push({ source, leaks, excerpt: text.slice(0, 600) });
    },
    /** Scans a response's status line, headers and body, plus that no upstream header came back. */
    scanResponse(source: string, response: Response, body: string): void {
      this.scan(source, responseText(response, body));
      for (const name of Object.keys(UPSTREAM_HEADERS)) {
        if (response.headers.has(name)) {
          findings.push({ source, leaks: [`upstream header ${name} passed back`], excerpt: responseText(response, '') });
        }
      }
    },
    findings: () => findings,
    scanned: () => scanned,
  };
}

export type LeakScanner = ReturnType<typeof createLeakScanner>;
