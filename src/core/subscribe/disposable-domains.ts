import { importOptional } from '../../node/optional-package.js';

type DisposableList = { blacklist(): Set<string> };

/** docs/subscribe.md "Throwaway addresses". Loaded by the Node entry only when set: the Worker bundle never carries the list. */
export async function loadDisposableDomains(load: () => Promise<DisposableList> = importMailchecker): Promise<(domain: string) => boolean> {
  const domains = (await importOptional('mailchecker', 'SUBSCRIBE_BLOCK_DISPOSABLE=true', load)).blacklist();
  return function isDisposableDomain(domain: string): boolean {
    const labels = domain.toLowerCase().split('.');
    return labels.some((_, index) => domains.has(labels.slice(index).join('.')));
  };
}

// CommonJS: Node's `import()` names only `isValid` statically, so `blacklist` is read from `default`.
const importMailchecker = async () => ((await import('mailchecker')) as { default: DisposableList }).default;
